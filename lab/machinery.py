"""The lab's machinery: fire many taps at once and measure them, then delete what a run left behind.

The races (``lab.registration_race``, ``lab.lost_update_race``) call the same service code the real views use;
this module only supplies the concurrency, the metering and the clean-up.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from tems.dynamo import boto3_client, current_config
from tems.metering import metered

T = TypeVar("T")

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
