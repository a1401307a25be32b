"""The scaling section of ``make bench``: does a per-request path cost the same at 10 and at 10,000 items?

Every module ``tests/bench/scaling_*.py`` exports ``PATHS``: a path name -> ``setup(n)``, which seeds a fresh,
empty, already-configured table with n items for that path and returns a zero-argument callable sending ONE
request exactly as a client would. For each path and each n this module creates a fresh table, runs the setup,
meters one call (DynamoDB requests, items read, read capacity) and times ~20 calls (the median is reported).
It writes a table, a chart (docs/scaling.svg) and, per path, whether its 10,000-item cost stays within 1.5x of
its 10-item cost. Measurements, not tests: nothing here asserts.
"""

from __future__ import annotations

import contextvars
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from tems.dynamo import TableConfig, boto3_client, configure_models, ensure_table, table_models, transaction_connection
from tems.metering import metered, ready_clients
from tests.bench.context import BenchContext

SIZES = (10, 1_000, 10_000)
CALLS = 20
BOUND = 1.5  # the promise: the 10,000-item cost is at most 1.5x the 10-item cost
CHART = Path(__file__).resolve().parents[2] / "docs" / "scaling.svg"

Setup = Callable[[int], Callable[[], object]]


@dataclass
class Row:
    path: str
    n: int
    requests: int
    operations: str
    items_read: int
    rcu: float
    p50_ms: float


def discover() -> dict[str, Setup]:
    """Every ``PATHS`` of every ``tests/bench/scaling_*.py``, in file then declaration order."""
    paths: dict[str, Setup] = {}
    for file in sorted(Path(__file__).parent.glob("scaling_*.py")):
        paths.update(import_module(f"tests.bench.{file.stem}").PATHS)
    return paths


def absolute_bounds() -> dict[str, tuple[int, float]]:
    """Paths judged by a fixed bound instead of the 1.5x rule: ``BOUNDS`` of the scaling modules, path ->
    (at most this many requests, at most this much RCU) at the largest size. A waitlist position grows with
    the number of digits of the position (one tree node per level), so the issue bounds it absolutely."""
    bounds: dict[str, tuple[int, float]] = {}
    for file in sorted(Path(__file__).parent.glob("scaling_*.py")):
        bounds.update(getattr(import_module(f"tests.bench.{file.stem}"), "BOUNDS", {}))
    return bounds


# --- items read: counted from each response (Count of a Query or Scan, the item of a GetItem, ...) ----------

_items_read: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("tems_bench_items", default=None)


def _count_items(parsed: dict, event_name: str, **_) -> None:
    counter = _items_read.get()
    if counter is None:
        return
    operation = event_name.rsplit(".", 1)[-1]
    if operation in ("Query", "Scan"):
        counter[0] += int(parsed.get("ScannedCount", parsed.get("Count", 0)))
    elif operation == "GetItem":
        counter[0] += 1 if parsed.get("Item") else 0
    elif operation == "BatchGetItem":
        counter[0] += sum(len(items) for items in parsed.get("Responses", {}).values())
    elif operation == "TransactGetItems":
        counter[0] += sum(1 for response in parsed.get("Responses", []) if response.get("Item"))


def _hook_item_counter() -> None:
    clients = [model._get_connection().connection.client for model in table_models()]
    clients.append(transaction_connection().client)
    for client in clients:
        client.meta.events.register("after-call.dynamodb", _count_items, unique_id="tems-bench-items-read")


def measure(path: str, n: int, call: Callable[[], object]) -> Row:
    call()  # warm: the first call of a path pays for client and template set-up, not for the data
    counter = [0]
    token = _items_read.set(counter)
    try:
        with metered() as meter:
            call()
    finally:
        _items_read.reset(token)
    timings = []
    for _ in range(CALLS):
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    operations = ", ".join(f"{name} {count}" for name, count in sorted(meter.requests.items()))
    return Row(path, n, meter.total_requests, operations, counter[0], meter.read_capacity,
               statistics.median(timings))


def _fresh_table(ctx: BenchContext) -> TableConfig:
    config = TableConfig(f"tems_scaling_{uuid.uuid4().hex[:8]}", ctx.endpoint, ctx.region)
    configure_models(config)
    ensure_table()
    ready_clients()
    _hook_item_counter()
    return config


def measure_all(ctx: BenchContext, paths: dict[str, Setup], sizes: tuple[int, ...] | None = None) -> list[Row]:
    rows = []
    sizes = sizes or SIZES
    try:
        for path, setup in paths.items():
            for n in sizes:
                config = _fresh_table(ctx)
                try:
                    started = time.monotonic()
                    call = setup(n)
                    rows.append(measure(path, n, call))
                    print(f"  {path} at {n:,}: seeded in {time.monotonic() - started:.0f} s, "
                          f"{rows[-1].requests} request(s), {rows[-1].rcu:g} RCU", flush=True)
                finally:
                    boto3_client().delete_table(TableName=config.table_name)
    finally:
        configure_models(TableConfig(ctx.table_name, ctx.endpoint, ctx.region))
    return rows


def _within(small: Row, large: Row) -> list[str]:
    checks = [("requests", small.requests, large.requests), ("RCU", small.rcu, large.rcu)]
    return [f"{name} {big:g} vs {little:g}" for name, little, big in checks if big > BOUND * little]


def verdict(rows: list[Row]) -> str:
    """Whether the largest size costs at most BOUND times the smallest, in requests and in read capacity (and,
    when it does not, whether the cost is at least flat over the sizes after the smallest)."""
    small, large = rows[0], rows[-1]
    bound = absolute_bounds().get(large.path)
    if bound is not None:
        requests, rcu = bound
        ok = large.requests <= requests and large.rcu <= rcu
        return (f"{'yes' if ok else '**no**'} (bound: at most {requests} request(s) and {rcu:g} RCU): "
                f"{large.requests} request(s), {large.rcu:g} RCU at {large.n:,}")
    failed = _within(small, large)
    if not failed:
        return (f"yes: {large.requests} request(s), {large.rcu:g} RCU at {large.n:,} vs {small.requests}, "
                f"{small.rcu:g} at {small.n:,}")
    answer = f"**no**: {', '.join(failed)} at {large.n:,} vs {small.n:,} items"
    if len(rows) > 2 and not _within(rows[1], large):
        answer += f"; flat from {rows[1].n:,} to {large.n:,} ({rows[1].rcu:g} and {large.rcu:g} RCU)"
    return answer


def chart(rows: list[Row]) -> str:
    """A hand-written SVG: read capacity per request against the number of items (one step per size)."""
    sizes = sorted({row.n for row in rows})
    width, height, left, top, right, bottom = 640, 320, 60, 20, 230, 40
    paths = list(dict.fromkeys(row.path for row in rows))
    top_rcu = max([row.rcu for row in rows] + [1.0]) * 1.15
    plot_w, plot_h = width - left - right, height - top - bottom
    colours = ["#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7ea4", "#57606a"]

    def x(n: int) -> float:
        return left + plot_w * sizes.index(n) / max(len(sizes) - 1, 1)

    def y(rcu: float) -> float:
        return top + plot_h * (1 - rcu / top_rcu)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" font-family="sans-serif" font-size="11">',
             '<title>Read capacity per request at 10, 1,000 and 10,000 items</title>',
             f'<rect width="{width}" height="{height}" fill="#fff"/>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#888"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#888"/>',
             f'<text x="14" y="{top + plot_h / 2}" transform="rotate(-90 14 {top + plot_h / 2})" '
             f'text-anchor="middle">RCU per request</text>']
    for n in sizes:
        parts.append(f'<text x="{x(n):.1f}" y="{height - 18}" text-anchor="middle">{n:,} items</text>')
    for step in range(5):
        value = top_rcu * step / 4
        parts.append(f'<text x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.1f}</text>')
        parts.append(f'<line x1="{left}" y1="{y(value):.1f}" x2="{left + plot_w}" y2="{y(value):.1f}" '
                     f'stroke="#eee"/>')
    for index, path in enumerate(paths):
        colour = colours[index % len(colours)]
        points = [(x(row.n), y(row.rcu)) for row in rows if row.path == path]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                     + " ".join(f"{px:.1f},{py:.1f}" for px, py in points) + '"/>')
        parts += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>' for px, py in points]
        legend_y = top + 14 * index + 6
        parts.append(f'<rect x="{width - right + 14}" y="{legend_y - 8}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{width - right + 30}" y="{legend_y + 1}">{_escape(path)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def section(rows: list[Row]) -> str:
    lines = [
        "## Scaling: cost per request at 10, 1,000 and 10,000 items",
        "",
        "Each path on a fresh table seeded with n items for it (`tests/bench/scaling_*.py`); one request metered "
        "(requests counted in botocore, items read from each response's Count/ScannedCount, read capacity as "
        f"DynamoDB Local reports it), p50 of {CALLS} requests through Django's test client. Written by "
        "`tests/bench/scaling.py`.",
        "",
        "| path | items | requests | items read | RCU | p50 ms |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(f"| {row.path} | {row.n:,} | {row.requests} ({row.operations}) | {row.items_read:,} | "
                     f"{row.rcu:g} | {row.p50_ms:.1f} |")
    lines += ["", f"![Read capacity per request against items]({CHART.name})", "",
              f"Is the {rows[-1].n:,}-item cost within {BOUND}x of the {rows[0].n:,}-item cost (requests and RCU)?",
              ""]
    for path in dict.fromkeys(row.path for row in rows):
        lines.append(f"- {path}: {verdict([row for row in rows if row.path == path])}")
    return "\n".join(lines) + "\n"


def run(ctx: BenchContext) -> str:
    rows = measure_all(ctx, discover())
    CHART.write_text(chart(rows))
    return section(rows)
