"""Request metering: what each code path really sends to DynamoDB, the capacity it consumes, and its throttles.

Counting hooks into botocore's events, so no service code has to know it is being measured.
"""

from __future__ import annotations

import contextvars
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tems.dynamo import clients_ready, mark_clients_ready, table_models, transaction_connection

_CAPACITY_OPERATIONS = {
    "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan",
    "BatchGetItem", "BatchWriteItem", "TransactGetItems", "TransactWriteItems",
}
_READ_OPERATIONS = {"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"}
# Answers that say "over the table's or a partition's throughput": botocore retries them on its own, so each is
# counted as it arrives, whether or not a retry then succeeds.
_THROTTLE_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException",
                             "RequestLimitExceeded"})


@dataclass
class DynamoMeter:
    requests: Counter = field(default_factory=Counter)
    read_capacity: float = 0.0
    write_capacity: float = 0.0
    throttles: int = 0
    # Whether the requests sent under this meter ask DynamoDB for the capacity they consume when their caller did
    # not (tems.transactions does not: DynamoDB Local takes measurably longer over a transaction that asks). A
    # benchmark asks; a request's own meter (tems.telemetry) does only when TEMS_LOG_CAPACITY says so.
    asks_capacity: bool = True
    # The meter this one was opened inside: counts flow up, so a service may meter its own operation while a
    # benchmark or the lab meters the whole run around it.
    parent: DynamoMeter | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    def _count_request(self, operation: str) -> None:
        with self._lock:
            self.requests[operation] += 1
        if self.parent is not None:
            self.parent._count_request(operation)

    def _count_throttle(self) -> None:
        with self._lock:
            self.throttles += 1
        if self.parent is not None:
            self.parent._count_throttle()

    def _add_capacity(self, operation: str, consumed: Any) -> None:
        entries = consumed if isinstance(consumed, list) else [consumed]
        with self._lock:
            for entry in entries or []:
                read = float(entry.get("ReadCapacityUnits", 0) or 0)
                write = float(entry.get("WriteCapacityUnits", 0) or 0)
                if not (read or write):
                    # Engines often report only the total; which kind it is follows from the operation.
                    total = float(entry.get("CapacityUnits", 0) or 0)
                    read, write = (total, 0.0) if operation in _READ_OPERATIONS else (0.0, total)
                self.read_capacity += read
                self.write_capacity += write
        if self.parent is not None:
            self.parent._add_capacity(operation, consumed)


_active_meter: contextvars.ContextVar[DynamoMeter | None] = contextvars.ContextVar("tems_dynamo_meter", default=None)


def _operation_from(event_name: str) -> str:
    return event_name.rsplit(".", 1)[-1]


def _before_parameter_build(params: dict, event_name: str, **_: Any) -> None:
    # Over "NONE" too: a caller that reads no capacity says so (tems.transactions), the meter reads it.
    meter = _active_meter.get()
    if (meter is not None and meter.asks_capacity and _operation_from(event_name) in _CAPACITY_OPERATIONS
            and params.get("ReturnConsumedCapacity", "NONE") == "NONE"):
        params["ReturnConsumedCapacity"] = "TOTAL"


def _before_send(event_name: str, **_: Any) -> None:
    meter = _active_meter.get()
    if meter is not None:
        meter._count_request(_operation_from(event_name))


def _after_call(parsed: dict, event_name: str, **_: Any) -> None:
    meter = _active_meter.get()
    if meter is not None and parsed.get("ConsumedCapacity"):
        meter._add_capacity(_operation_from(event_name), parsed["ConsumedCapacity"])


def _on_attempt(response: tuple[Any, dict] | None = None, **_: Any) -> None:
    # botocore asks its retry handlers about every answer; this one only looks, so it returns None (no opinion).
    meter = _active_meter.get()
    if meter is not None and response is not None and response[1].get("Error", {}).get("Code") in _THROTTLE_CODES:
        meter._count_throttle()


def meter_client(client) -> None:
    if getattr(client, "_tems_metered", False):
        return
    events = client.meta.events
    # unique_id makes registering idempotent: two threads metering at once on a fresh client must not both
    # add the hooks, or every request would be counted twice.
    events.register("before-parameter-build.dynamodb", _before_parameter_build, unique_id="tems-meter-params")
    events.register("before-send.dynamodb", _before_send, unique_id="tems-meter-send")
    events.register("after-call.dynamodb", _after_call, unique_id="tems-meter-after")
    events.register("needs-retry.dynamodb", _on_attempt, unique_id="tems-meter-retry")
    client._tems_metered = True


def ready_clients() -> None:
    """Create every model's botocore client now, in this thread, with the metering hooks on.

    PynamoDB builds a client lazily on first use and without a lock, so N threads that hit a cold model at once
    each build their own (and a botocore session each): seconds of CPU on a small machine, during which the
    threads run one after another. Call this before fanning work out to threads. It sends no request.
    Every ``metered()`` calls it, so after the first time it must cost nothing: it walks the models once per
    configuration.
    """
    if clients_ready():
        return
    for model in table_models():
        meter_client(model._get_connection().connection.client)
    meter_client(transaction_connection().client)
    mark_clients_ready()


@contextmanager
def metered(*, ask_capacity: bool = True) -> Iterator[DynamoMeter]:
    """Count the DynamoDB requests, capacity and throttled answers of the code run inside, in this context only.

    Work handed to threads is counted when it runs under ``contextvars.copy_context()`` of this context.
    Meters nest: whatever an inner ``metered()`` counts is counted by the enclosing one too, and an inner meter
    asks for capacity whenever an enclosing one does. With ``ask_capacity`` False, capacity is what the requests
    asked for anyway (PynamoDB's single-item requests and queries do, transactions do not).
    """
    ready_clients()
    parent = _active_meter.get()
    meter = DynamoMeter(parent=parent, asks_capacity=ask_capacity or (parent is not None and parent.asks_capacity))
    token = _active_meter.set(meter)
    try:
        yield meter
    finally:
        _active_meter.reset(token)
