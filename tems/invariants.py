"""What must always be true of the table. Apps add checks in ``<app>/invariants.py`` with ``@invariant``.

``manage.py check_invariants`` scans the table once (strongly consistent, in parallel segments if asked) and
shows every item to every check exactly once, as a stream. A check keeps only small aggregates (per event, per
inventory item), never the items, so memory does not grow with the number of registrations or changes: where
two sides of a relation must match (claims and registrations, waitlist entries and waitlisted registrations),
a check compares order-independent fingerprints of the two sides instead of holding either.
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from django.utils.module_loading import autodiscover_modules

from tems.dynamo import boto3_client, current_config
from tems.outbox import STALE_AFTER, outbox_stale

Item = dict[str, Any]
_CHECKS: dict[str, Callable[[], StreamingCheck]] = {}

# Items per Scan page: a full 1 MB page parses into tens of MB of Python objects, and each segment holds one page
# in flight plus one queued; 500 items keep that to a few MB per segment for a few more (cheap) requests.
SCAN_PAGE_ITEMS = 500

# 64-bit sums of 64-bit hashes: two sides that differ go unnoticed with probability ~2^-64 per event.
_MASK = (1 << 64) - 1


class StreamingCheck:
    """One invariant: ``observe`` sees every item of the table once, in no particular order; ``problems`` says,
    after the last item, what is wrong. Subclasses keep aggregates, never the items they are shown."""

    def observe(self, item: Item) -> None:
        raise NotImplementedError

    def problems(self) -> Iterable[str]:
        raise NotImplementedError


def invariant(name: str) -> Callable[[type[StreamingCheck]], type[StreamingCheck]]:
    def register(check: type[StreamingCheck]) -> type[StreamingCheck]:
        _CHECKS[name] = check
        return check

    return register


def fingerprint(*parts: Any) -> int:
    """A 64-bit hash of the parts; summed (``Multiset``) it fingerprints a collection whatever its order."""
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "big")


@dataclass
class Multiset:
    """An order-independent summary of a collection of tuples: equal collections have equal summaries."""

    count: int = 0
    digest: int = 0

    def add(self, *parts: Any) -> None:
        self.count += 1
        self.digest = (self.digest + fingerprint(*parts)) & _MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Multiset) and (self.count, self.digest) == (other.count, other.digest)


@dataclass
class CheckReport:
    """What ``check_all`` looked at and found."""

    results: dict[str, list[str]]
    items: int = 0
    segments: int = 1
    seconds: float = 0.0
    by_entity: dict[str, int] = field(default_factory=dict)

    @property
    def broken(self) -> int:
        return sum(len(problems) for problems in self.results.values())


def scan_items(*, segments: int = 1, on_page: Callable[[int], None] | None = None) -> Iterator[Item]:
    """Every item of the table, deserialized, read strongly consistently in ``segments`` parallel scans.

    Pages of ``SCAN_PAGE_ITEMS`` are handed over through a queue of one page per segment, so at most ~2 pages
    per segment are in memory whatever the table's size. ``on_page(n)`` is called (on the caller's thread) after
    each page of n items.
    """
    if segments < 1:
        raise ValueError("segments must be at least 1")
    # One client for every thread: clients are thread-safe, creating them concurrently is not.
    client = boto3_client()
    table = current_config().table_name
    deserializer = TypeDeserializer()
    pages: queue.Queue = queue.Queue(maxsize=segments)
    stop = threading.Event()
    finished = object()

    def put(value: Any) -> bool:
        while not stop.is_set():
            try:
                pages.put(value, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def scan_segment(segment: int) -> None:
        try:
            paginator = client.get_paginator("scan")
            for page in paginator.paginate(TableName=table, ConsistentRead=True, Segment=segment,
                                           TotalSegments=segments,
                                           PaginationConfig={"PageSize": SCAN_PAGE_ITEMS}):
                items = [{k: deserializer.deserialize(v) for k, v in raw.items()} for raw in page["Items"]]
                if not put(items):
                    return
        except Exception as error:  # handed to the caller's thread, which raises it
            put(error)
        finally:
            put(finished)

    threads = [threading.Thread(target=scan_segment, args=(segment,), daemon=True, name=f"scan-{segment}")
               for segment in range(segments)]
    for thread in threads:
        thread.start()
    try:
        running = segments
        while running:
            page = pages.get()
            if page is finished:
                running -= 1
            elif isinstance(page, Exception):
                raise page
            else:
                yield from page
                if on_page is not None:
                    on_page(len(page))
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=5)


def registered_checks() -> dict[str, Callable[[], StreamingCheck]]:
    autodiscover_modules("invariants")
    return dict(_CHECKS)


def check_items(items: Iterable[Item], *, names: Iterable[str] | None = None) -> CheckReport:
    """Run the registered checks (or those named) over a stream of deserialized items."""
    wanted = registered_checks()
    if names is not None:
        wanted = {name: wanted[name] for name in names}
    checks = {name: factory() for name, factory in sorted(wanted.items())}
    report = CheckReport(results={})
    started = time.perf_counter()
    for item in items:
        report.items += 1
        entity = str(item.get("entity", "?"))
        report.by_entity[entity] = report.by_entity.get(entity, 0) + 1
        for check in checks.values():
            check.observe(item)
    report.results = {name: list(check.problems()) for name, check in checks.items()}
    report.seconds = time.perf_counter() - started
    return report


def check_report(*, segments: int = 1, on_page: Callable[[int], None] | None = None) -> CheckReport:
    """Scan the table once and run every registered check on it."""
    report = check_items(scan_items(segments=segments, on_page=on_page))
    report.segments = segments
    return report


def check_all(*, segments: int = 1) -> dict[str, list[str]]:
    """Every registered check's list of problems (empty lists when all is well)."""
    return check_report(segments=segments).results


@invariant(f"outbox messages are delivered within {int(STALE_AFTER.total_seconds() // 60)} minutes")
class OutboxNotStale(StreamingCheck):
    def __init__(self) -> None:
        self.found: list[str] = []

    def observe(self, item: Item) -> None:
        if item.get("entity") == "OutboxMessage":
            self.found += outbox_stale(items=[item])

    def problems(self) -> Iterable[str]:
        return self.found
