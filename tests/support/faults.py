"""Faults between the app and DynamoDB, injected through botocore's ``before-send`` event (tests and the lab).

Four kinds of fault, chosen per DynamoDB operation and probability, from a seeded random generator:

- ``LOST``: the request is really sent and applied, then botocore is told the connection dropped before the
  answer came (``ReadTimeoutError``). The SDK retries the *same* request: for TransactWriteItems with the same
  ``ClientRequestToken``, so DynamoDB answers the repeat as a success without applying it again; any other
  write is applied (or refused by its own condition) a second time. This is the fault issue 8 is about.
- ``ERROR``: a 500 ``InternalServerError`` without sending anything; the SDK retries.
- ``THROTTLE``: ``ProvisionedThroughputExceededException`` without sending anything; the SDK retries with its
  throttling backoff.
- ``CONFLICT``: for TransactWriteItems only, ``TransactionCanceledException`` with one ``TransactionConflict``
  reason, as DynamoDB answers when another transaction holds an item. The SDK does not retry it: the app must.
  Only on a first attempt: a retry repeats the first attempt's token and is answered with its outcome.

By default a fault only hits an attempt that the SDK will retry (``amz-sdk-request: attempt=n; max=m`` with
n < m), so every request finally reaches DynamoDB: the faults are the transient kind the SDK's retries absorb,
and what is tested is whether the app answers right after them. ``Fault(final_attempt_too=True)`` lets a fault
exhaust the retries, to test what the app does when the SDK gives up.

Use::

    with inject(Fault(LOST, operations={"UpdateItem"}), seed=7) as faults:
        ...
    assert faults.fired(LOST)

Randomness is drawn from one generator per thread, seeded by ``seed`` and the thread's name, so a run with the
same seed and named threads meets the same faults in the same places (as far as the threads' own paths allow).
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import urllib3
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError
from botocore.retries.quota import RetryQuota
from botocore.retries.standard import ExponentialBackoff

from tems.dynamo import table_models, transaction_connection

LOST = "lost"
ERROR = "error"
THROTTLE = "throttle"
CONFLICT = "conflict"
KINDS = (LOST, ERROR, THROTTLE, CONFLICT)

WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})

_JSON = "application/x-amz-json-1.0"
_DYNAMODB_ERROR = "com.amazonaws.dynamodb.v20120810#"


@dataclass(frozen=True)
class Fault:
    """Hit requests of ``operations`` (all writes by default) with ``kind``, each with ``probability``.

    ``when`` narrows it to requests whose parameters (the JSON body botocore built) it accepts; ``times`` caps
    how often it fires in all (None: no cap).
    """

    kind: str
    operations: Collection[str] = WRITE_OPERATIONS
    probability: float = 1.0
    times: int | None = None
    when: Callable[[dict[str, Any]], bool] | None = None
    final_attempt_too: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}")
        if self.kind == CONFLICT and set(self.operations) - {"TransactWriteItems"}:
            raise ValueError("a TransactionConflict cancellation exists only for TransactWriteItems")


@dataclass(frozen=True)
class Fired:
    kind: str
    operation: str
    attempt: int
    thread: str
    token: str | None  # the transaction's ClientRequestToken, to show a retry carried the same one


@dataclass
class FaultInjector:
    faults: tuple[Fault, ...]
    seed: int = 0
    log: list[Fired] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _fired_per_fault: dict[int, int] = field(default_factory=dict, repr=False)
    _rngs: dict[str, random.Random] = field(default_factory=dict, repr=False)
    _http: urllib3.PoolManager = field(default_factory=lambda: urllib3.PoolManager(maxsize=64), repr=False)

    def fired(self, kind: str | None = None, operation: str | None = None) -> list[Fired]:
        with self._lock:
            return [f for f in self.log if (kind is None or f.kind == kind)
                    and (operation is None or f.operation == operation)]

    def _rng(self, thread: str) -> random.Random:
        rng = self._rngs.get(thread)
        if rng is None:
            rng = self._rngs[thread] = random.Random(f"{self.seed}:{thread}")
        return rng

    def _choose(self, operation: str, params: dict[str, Any], attempt: int, max_attempts: int) -> Fault | None:
        thread = threading.current_thread().name
        with self._lock:
            rng = self._rng(thread)
            for index, fault in enumerate(self.faults):
                if operation not in fault.operations:
                    continue
                if attempt >= max_attempts and not fault.final_attempt_too:
                    continue
                if fault.kind == CONFLICT and attempt > 1:
                    # A retry carries the first attempt's token: DynamoDB answers it with that attempt's
                    # outcome (or TransactionInProgress), never with a fresh conflict for a write it applied.
                    continue
                if fault.times is not None and self._fired_per_fault.get(index, 0) >= fault.times:
                    continue
                if fault.when is not None and not fault.when(params):
                    continue
                # One draw per matching fault, so whether fault B fires does not shift fault A's sequence.
                if rng.random() < fault.probability:
                    self._fired_per_fault[index] = self._fired_per_fault.get(index, 0) + 1
                    self.log.append(Fired(fault.kind, operation, attempt, thread, params.get("ClientRequestToken")))
                    return fault
        return None

    def before_send(self, request, event_name: str, **_: Any) -> AWSResponse | None:
        operation = event_name.rsplit(".", 1)[-1]
        attempt, max_attempts = _attempt_of(request)
        try:
            params = json.loads(request.body or b"{}")
        except (TypeError, ValueError):
            params = {}
        fault = self._choose(operation, params, attempt, max_attempts)
        if fault is None:
            return None  # botocore sends it as usual
        if fault.kind == LOST:
            self._really_send(request)
            raise ReadTimeoutError(endpoint_url=request.url, error="answer dropped after it applied (a fault)")
        if fault.kind == ERROR:
            return _response(request, 500, "InternalServerError", "injected by tests.support.faults", prefix="")
        if fault.kind == THROTTLE:
            return _response(request, 400, "ProvisionedThroughputExceededException",
                             "The level of configured provisioned throughput for the table was exceeded "
                             "(injected by tests.support.faults)")
        return _conflict(request, params)

    def _really_send(self, request) -> None:
        answer = self._http.request(request.method, request.url, body=request.body,
                                    headers=dict(request.headers.items()), retries=False)
        answer.drain_conn()


def _attempt_of(request) -> tuple[int, int]:
    # botocore's standard retry mode numbers each attempt in this header: "attempt=2; max=4".
    header = request.headers.get("amz-sdk-request") or ""
    if isinstance(header, bytes):
        header = header.decode()
    parts = dict(part.strip().split("=", 1) for part in header.split(";") if "=" in part)
    try:
        return int(parts["attempt"]), int(parts["max"])
    except (KeyError, ValueError):
        return 1, 1


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


def _response(request, status: int, code: str, message: str, *, prefix: str = _DYNAMODB_ERROR,
              extra: dict[str, Any] | None = None) -> AWSResponse:
    body = json.dumps({"__type": prefix + code, "message": message, **(extra or {})}).encode()
    headers = {"Content-Type": _JSON, "Content-Length": str(len(body)), "x-amzn-RequestId": "tems-faults"}
    return AWSResponse(request.url, status, headers, _Body(body))


def _conflict(request, params: dict[str, Any]) -> AWSResponse:
    items = params.get("TransactItems") or [{}]
    reasons = [{"Code": "None"} for _ in items]
    reasons[random.randrange(len(reasons))] = {"Code": "TransactionConflict",
                                                "Message": "Transaction is ongoing for the item"}
    codes = ", ".join(reason["Code"] for reason in reasons)
    return _response(request, 400, "TransactionCanceledException",
                     f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
                     extra={"CancellationReasons": reasons})


_active: dict[str, FaultInjector | None] = {"injector": None}
_install_lock = threading.Lock()


def _dispatch(request, event_name: str, **kwargs: Any) -> AWSResponse | None:
    injector = _active["injector"]
    if injector is None:
        return None
    return injector.before_send(request, event_name=event_name, **kwargs)


def install(client) -> None:
    """Let faults reach requests of ``client`` (a no-op hook while no ``inject`` is active)."""
    client.meta.events.register("before-send.dynamodb", _dispatch, unique_id="tems-faults")


def _install_everywhere() -> None:
    for model in table_models():
        install(model._get_connection().connection.client)
    install(transaction_connection().client)


@contextmanager
def inject(*faults: Fault, seed: int = 0, backoff_scale: float = 0.01) -> Iterator[FaultInjector]:
    """Inject ``faults`` into every request the app's models and transactions send, inside the block.

    ``backoff_scale`` shrinks the SDK's retry delays (its shape unchanged) so a test with many throttles does
    not wait seconds for each; 1.0 keeps them real.
    """
    injector = FaultInjector(tuple(faults), seed=seed)
    original = ExponentialBackoff.delay_amount

    def scaled(self, context):
        return original(self, context) * backoff_scale

    with _install_lock:
        if _active["injector"] is not None:
            raise RuntimeError("fault injection is already active")
        _install_everywhere()
        _active["injector"] = injector
    try:
        # Each botocore client has a retry budget (its RetryQuota) that retries spend and successes refill. The
        # clients outlive a test (kept per endpoint), so the faults made up here must not spend it: a budget
        # drained by one test's hundreds of synthetic faults would leave a later test's lost answer unretried,
        # and that test would see a failure its own faults never caused.
        with (mock.patch.object(ExponentialBackoff, "delay_amount", scaled),
              mock.patch.object(RetryQuota, "acquire", return_value=True)):
            yield injector
    finally:
        _active["injector"] = None
