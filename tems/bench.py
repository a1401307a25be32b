"""``make bench``: measure each app's paths on a fresh in-memory DynamoDB Local and write docs/PERFORMANCE.md.

Each app contributes a ``<app>/bench.py`` with ``run(ctx: BenchContext) -> str`` returning a Markdown section.
These are measurements, not tests: nothing here asserts a timing.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

BENCH_APPS = ("registrations", "registrations.checkins", "inventory")
OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "PERFORMANCE.md"


@dataclass
class BenchContext:
    endpoint: str  # the DynamoDB Local the models point at
    table_name: str
    region: str


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tems.settings")
    # The driver is a developer's process (the servers it measures run with DEBUG off, see registrations/bench.py).
    os.environ.setdefault("DJANGO_DEBUG", "1")
    # Users and sessions of the benchmark live in a throwaway database: a fresh checkout has no .data/ yet, and
    # a benchmark must not leave accounts in the developer's own database. Servers it starts inherit this.
    scratch = tempfile.TemporaryDirectory(prefix="tems-bench-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch.name}/bench.sqlite3")
    # A benchmark is one user writing as fast as it can: the per-user write limit would measure itself.
    os.environ["TEMS_WRITE_RATE"] = "0"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from tems.dynamo import TableConfig, configure_models, ensure_table
    from tems.local_dynamodb import DynamoDBLocal

    sections = []
    started = time.monotonic()
    with DynamoDBLocal() as dynamodb:
        config = TableConfig("tems_bench", dynamodb.endpoint, "eu-west-1")
        os.environ["DYNAMODB_ENDPOINT_URL"] = dynamodb.endpoint
        os.environ["DYNAMODB_TABLE"] = config.table_name
        configure_models(config)
        ensure_table()
        # On a fresh checkout nothing has created the data directory that holds the SQLite file yet.
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", verbosity=0)
        ctx = BenchContext(dynamodb.endpoint, config.table_name, config.region)
        for app in BENCH_APPS:
            try:
                module = import_module(f"{app}.bench")
            except ModuleNotFoundError:
                continue
            print(f"benchmarking {app} ...", flush=True)
            sections.append(module.run(ctx))
    header = (
        "# TEMS performance\n\n"
        f"Written by `make bench` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        "DynamoDB Local (in memory) on the same machine. Request counts are exact (counted in botocore); "
        "times depend on the machine and are for comparison between rows, not absolute promises.\n\n"
    )
    OUTPUT.parent.mkdir(exist_ok=True)
    OUTPUT.write_text(header + "\n\n".join(sections) + "\n")
    print(f"wrote {OUTPUT} in {time.monotonic() - started:.0f} s")
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
