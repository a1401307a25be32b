"""``make bench`` (``python -m tests.bench``): measure on a fresh in-memory DynamoDB Local, write docs/PERFORMANCE.md.

Every module of this package with ``run(ctx: BenchContext) -> str`` is a section: it returns Markdown, and a new
module is picked up with no edit here. These are measurements, not tests: nothing here asserts a timing.
A module marked ``SLOW = True`` runs only when named (``python -m tests.bench hot``); a full run puts its ``LINK``
(Markdown pointing at the page it writes itself) in its place.
"""

from __future__ import annotations

import os
import pkgutil
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

PACKAGE = "tests.bench"
OUTPUT = Path(__file__).resolve().parents[2] / "docs" / "PERFORMANCE.md"
# The sections in the order the page reads best; any other section follows them, by name.
FIRST = ("registrations", "registration_floor", "checkins", "inventory")


def sections() -> list[tuple[str, Callable[..., str], bool]]:
    """Every module of this package that has ``run(ctx)`` and whether it is SLOW, imported (Django must be set
    up)."""
    names = sorted((module.name for module in pkgutil.iter_modules([str(Path(__file__).parent)])
                    if not module.name.startswith("_")),
                   key=lambda name: (FIRST.index(name) if name in FIRST else len(FIRST), name))
    found = []
    for name in names:
        module = import_module(f"{PACKAGE}.{name}")
        run = getattr(module, "run", None)
        if callable(run):
            found.append((name, run, bool(getattr(module, "SLOW", False))))
    return found


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tems.settings")
    # The driver is a developer's process (the servers it measures run with DEBUG off, see tests/bench/driver.py).
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
    from tests.bench.context import BenchContext

    only = set(sys.argv[1:])  # ``python -m tests.bench inventory``: just the sections named

    sections_written = []
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
        for name, run, slow in sections():
            if only and name not in only:
                continue
            if slow and not only:
                sections_written.append(import_module(f"{PACKAGE}.{name}").LINK)
                continue
            print(f"benchmarking {name} ...", flush=True)
            sections_written.append(run(ctx))
    header = (
        "# TEMS performance\n\n"
        f"Written by `make bench` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        "DynamoDB Local (in memory) on the same machine. Request counts are exact (counted in botocore); "
        "times depend on the machine and are for comparison between rows, not absolute promises.\n\n"
    )
    if only:  # a partial run must not replace the full page: show it instead
        print("\n\n".join(sections_written))
    else:
        OUTPUT.parent.mkdir(exist_ok=True)
        OUTPUT.write_text(header + "\n\n".join(sections_written) + "\n")
        print(f"wrote {OUTPUT} in {time.monotonic() - started:.0f} s")
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
