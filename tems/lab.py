"""The double-click lab's shared machinery: fire many taps at once, measure them, keep each run.

The races themselves live with their apps (``registrations/lab.py``, ``inventory/lab.py``) and call the same
service code the real views use; this module only supplies the concurrency, the metering and the run history.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from html import escape
from typing import Any, Generic, TypeVar

from pynamodb.attributes import TTLAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.exceptions import DeleteError, PutError
from pynamodb.models import Model

from tems.clock import utcnow
from tems.dynamo import TableMeta, boto3_client, current_config, metered
from tems.errors import DomainError

T = TypeVar("T")

# Runs are teaching material, not records: a week is plenty to compare today's runs side by side.
RUN_TTL = timedelta(days=7)
# Every tap waits at this barrier so they really hit DynamoDB together, as a double click does.
BARRIER_TIMEOUT_SECONDS = 30


@dataclass
class Outcome(Generic[T]):
    value: T | None = None
    error: BaseException | None = None


@dataclass
class Fired(Generic[T]):
    outcomes: list[Outcome[T]]
    elapsed_ms: float
    dynamodb_requests: int
    consumed_wcu: float
    requests_by_operation: dict[str, int] = field(default_factory=dict)


def fire_concurrently(calls: Sequence[Callable[[], T]]) -> Fired[T]:
    """Run every call on its own thread, released together, and count what they sent to DynamoDB.

    Exceptions are captured per call (a lab shows failures, it does not crash on them).
    """
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], T]) -> Outcome[T]:
        barrier.wait(timeout=BARRIER_TIMEOUT_SECONDS)
        try:
            return Outcome(value=call())
        except Exception as error:  # noqa: BLE001 - the lab reports every failure as data
            return Outcome(error=error)

    with metered() as meter:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="lab-tap") as pool:
            # Each thread runs in a copy of this context, so the meter sees its requests.
            futures = [pool.submit(contextvars.copy_context().run, run, call) for call in calls]
            outcomes = [future.result() for future in futures]
        elapsed_ms = (time.perf_counter() - started) * 1000
    return Fired(outcomes, round(elapsed_ms, 1), meter.total_requests, round(meter.write_capacity, 1),
                 dict(meter.requests))


class LabRun(Model):
    """``LAB#<kind>`` / ``RUN#<time>#<id>``: one lab run, its parameters and what it measured."""

    class Meta(TableMeta):
        pass

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    entity = UnicodeAttribute(default="LabRun")
    kind = UnicodeAttribute()
    technique = UnicodeAttribute()
    params = UnicodeAttribute()
    result = UnicodeAttribute()
    created_at = UTCDateTimeAttribute(default=utcnow)
    expires_at = TTLAttribute()

    @staticmethod
    def pk_for(kind: str) -> str:
        return f"LAB#{kind}"

    @staticmethod
    def sk_for(created_at, run_id: str) -> str:
        return f"RUN#{created_at.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#{run_id}"

    @property
    def params_dict(self) -> dict[str, Any]:
        return json.loads(self.params)

    @property
    def result_dict(self) -> dict[str, Any]:
        return json.loads(self.result)


# --- how many runs at once -----------------------------------------------------------------------------------
# A run fires up to 100 threads of DynamoDB requests from the web server that serves everyone else, so the whole
# deployment (every server) runs at most LAB_SLOTS at once; a third visitor is told to try again shortly.
LAB_SLOTS = 2
# Longer than the longest run (100 taps with 200 ms of delay, or the barrier's 30 s timeout): a slot outlives its
# run only when the process died holding it, and then the next run takes it over once the lease ran out.
SLOT_LEASE = timedelta(seconds=90)
BUSY_RETRY_AFTER_SECONDS = 5


class LabSlot(Model):
    """``LABSLOT`` / ``SLOT#<n>``: one of the ``LAB_SLOTS`` runs allowed at once, while its lease lasts."""

    class Meta(TableMeta):
        pass

    PK = "LABSLOT"

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    entity = UnicodeAttribute(default="LabSlot")
    holder = UnicodeAttribute()
    lease_expires_at = UTCDateTimeAttribute()
    expires_at = TTLAttribute()  # a dead holder's slot also deletes itself

    @classmethod
    def key_for(cls, slot: int) -> tuple[str, str]:
        return cls.PK, f"SLOT#{slot}"


@contextmanager
def lab_slot(*, slots: int | None = None) -> Iterator[str]:
    """Hold one of the lab's run slots for the ``with`` block; DomainError('busy') when all are taken.

    Each slot is taken by a conditional put (free, or its lease ran out), so servers that share the table never
    hand one slot to two runs, and nothing is kept in process memory. Released by a delete conditioned on still
    being the holder.
    """
    holder = uuid.uuid4().hex
    for slot in range(LAB_SLOTS if slots is None else slots):
        now = utcnow()
        claim = LabSlot(*LabSlot.key_for(slot), holder=holder, lease_expires_at=now + SLOT_LEASE,
                        expires_at=now + SLOT_LEASE)
        try:
            claim.save(condition=LabSlot.pk.does_not_exist() | (LabSlot.lease_expires_at < now))
        except PutError as error:
            if error.cause_response_code != "ConditionalCheckFailedException":
                raise
            continue
        try:
            yield holder
        finally:
            try:
                claim.delete(condition=LabSlot.holder == holder)
            except DeleteError as error:
                if error.cause_response_code != "ConditionalCheckFailedException":
                    raise  # otherwise the lease ran out and another run holds the slot now: leave it be
        return
    raise DomainError("busy", "The lab is busy with other runs right now; try again in a few seconds.",
                      retry_after=BUSY_RETRY_AFTER_SECONDS)


def lab_run_save(*, kind: str, technique: str, params: dict[str, Any], result: dict[str, Any]) -> LabRun:
    now = utcnow()
    run = LabRun(
        LabRun.pk_for(kind), LabRun.sk_for(now, uuid.uuid4().hex[:8]),
        kind=kind, technique=technique, params=json.dumps(params), result=json.dumps(result),
        created_at=now, expires_at=now + RUN_TTL,
    )
    run.save()  # a fresh time-ordered key: nothing to collide with
    return run


def lab_runs_recent(*, kind: str, limit: int = 10) -> list[LabRun]:
    return list(LabRun.query(LabRun.pk_for(kind), scan_index_forward=False, limit=limit))


def bar_chart_svg(*, title: str, bars: Sequence[tuple[str, float]], unit: str = "", good_max: float | None = None,
                  width: int = 720, bar_height: int = 28) -> str:
    """A small accessible horizontal bar chart. Bars above ``good_max`` are drawn in the warning colour."""
    label_width, gap, top = 260, 10, 36
    height = top + len(bars) * (bar_height + gap) + 10
    biggest = max([value for _, value in bars] + [1])
    scale = (width - label_width - 70) / biggest
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="chart-title" class="chart">',
        f'<title id="chart-title">{escape(title)}</title>',
        f'<text x="0" y="20" class="chart-title">{escape(title)}</text>',
    ]
    for n, (label, value) in enumerate(bars):
        y = top + n * (bar_height + gap)
        bad = good_max is not None and value > good_max
        parts.append(f'<text x="{label_width - 8}" y="{y + bar_height * 0.68:.0f}" text-anchor="end" '
                     f'class="chart-label">{escape(label)}</text>')
        parts.append(f'<rect x="{label_width}" y="{y}" width="{max(value * scale, 2):.1f}" height="{bar_height}" '
                     f'rx="4" class="{"bar-bad" if bad else "bar-good"}"/>')
        shown = f"{value:g}{unit}"
        parts.append(f'<text x="{label_width + max(value * scale, 2) + 6:.1f}" y="{y + bar_height * 0.68:.0f}" '
                     f'class="chart-value">{escape(shown)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def scratch_delete(*, partitions: Sequence[str], keys: Sequence[dict[str, Any]] = ()) -> int:
    """Delete a lab run's scratch data: every item of ``partitions`` plus the given raw ``{PK, SK}`` keys.

    Returns how many items it deleted. Only for data the lab itself created for one run.
    """
    client = boto3_client()
    table = current_config().table_name
    doomed = list(keys)
    for pk in partitions:
        for page in client.get_paginator("query").paginate(
            TableName=table, KeyConditionExpression="PK = :pk", ExpressionAttributeValues={":pk": {"S": pk}},
            ProjectionExpression="PK, SK", ConsistentRead=True,
        ):
            doomed.extend(page["Items"])
    for start in range(0, len(doomed), 25):  # BatchWriteItem takes 25 requests at most
        batch = [{"DeleteRequest": {"Key": key}} for key in doomed[start:start + 25]]
        unprocessed = {table: batch}
        while unprocessed:
            unprocessed = client.batch_write_item(RequestItems=unprocessed).get("UnprocessedItems") or {}
    return len(doomed)
