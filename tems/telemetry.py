"""What one request, or one outbox relay pass, did: its one log line and the metrics embedded in it.

A ``scope`` collects, while it is open, the DynamoDB requests sent (a ``tems.metering`` meter), the counters of
the metrics contract (docs/ARCHITECTURE.md, "Logs and metrics") and fields for the log line: the idempotency key,
whether the answer was a replay, each cancelled transaction's reasons by label. When it closes it writes ONE
line; ``tems.logs`` renders its counters as CloudWatch's Embedded Metric Format (EMF), so metrics reach
CloudWatch through the log stream, with no endpoint and no request of their own. Counters that are also kept by
transaction item label (a conflict on ``seat``) add one line per label, and only when they happened.

``count`` and ``note`` cost a context-variable lookup; outside a scope (a management command, a test calling a
service directly) they do nothing.
"""

from __future__ import annotations

import contextvars
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import structlog

from tems.metering import DynamoMeter, metered

# --- the metrics contract: names the deployment's alarms and dashboards are built on; never rename one -------
NAMESPACE = "TEMS"
REGISTRATION_CREATED = "RegistrationCreated"
REGISTRATION_REPLAYED = "RegistrationReplayed"
REGISTRATION_ALREADY_REGISTERED = "RegistrationAlreadyRegistered"
ANSWER_5XX = "Answer5xx"
ANSWERED_STATUSES = (409, 422, 429, 503)  # each is also counted on its own, as Answer409, ...
TRANSACTION_CONFLICT = "TransactionConflict"
THROTTLE = "Throttle"
RETRY = "Retry"
OUTBOX_LAG_SECONDS = "OutboxLagSeconds"
OUTBOX_DELIVERED = "OutboxDelivered"
CHECK_IN = "CheckIn"
# Every name above that reaches CloudWatch: the deployment's alarms and dashboard may read only these.
METRIC_NAMES = frozenset({
    REGISTRATION_CREATED, REGISTRATION_REPLAYED, REGISTRATION_ALREADY_REGISTERED, ANSWER_5XX,
    *(f"Answer{status}" for status in ANSWERED_STATUSES), TRANSACTION_CONFLICT, THROTTLE, RETRY,
    OUTBOX_LAG_SECONDS, OUTBOX_DELIVERED, CHECK_IN,
})
# The dimension that the by-label metrics are also emitted with: the transaction item's label.
LABEL = "Label"
UNITS = {OUTBOX_LAG_SECONDS: "Seconds"}  # every other metric is a Count

REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_META = "HTTP_X_REQUEST_ID"  # the header as Django's request.META names it
# Accepted from a client or a proxy only in this shape: it goes into log lines and mail headers verbatim.
_WELL_FORMED_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")

logger = structlog.get_logger("tems.telemetry")


def answer_metric(status: int) -> str:
    return f"Answer{status}"


def request_id_from(header: str | None) -> str:
    """The client's request id when it sent a well-formed one, else a new one."""
    if header and _WELL_FORMED_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


@dataclass(eq=False)
class Scope:
    """What happened while one scope was open; its line is written when it closes."""

    event: str
    request_id: str | None
    meter: DynamoMeter
    fields: dict[str, Any] = field(default_factory=dict)
    counts: dict[tuple[str, str | None], int] = field(default_factory=dict)  # (metric, label or None) -> count
    values: dict[str, float] = field(default_factory=dict)  # measurements: the last one of a scope stands
    cancellations: list[dict[str, str]] = field(default_factory=list)
    # Work handed to threads under copy_context() adds to the same scope.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, metric: str, label: str | None = None, n: int = 1) -> None:
        with self._lock:
            self.counts[(metric, label)] = self.counts.get((metric, label), 0) + n

    def totals(self) -> dict[str, float]:
        """Every metric of the scope summed over labels (the dimension set ``[]``), zero counts left out."""
        totals: dict[str, float] = {}
        for (metric, _), n in self.counts.items():
            totals[metric] = totals.get(metric, 0) + n
        if self.meter.throttles:
            totals[THROTTLE] = totals.get(THROTTLE, 0) + self.meter.throttles  # single requests: no label
        if self.fields.get("replayed"):
            totals[REGISTRATION_REPLAYED] = totals.get(REGISTRATION_REPLAYED, 0) + 1
        return {**{metric: n for metric, n in totals.items() if n}, **self.values}

    def by_label(self) -> dict[str, dict[str, int]]:
        labelled: dict[str, dict[str, int]] = {}
        for (metric, label), n in self.counts.items():
            if label is not None and n:
                labelled.setdefault(label, {})[metric] = n
        return labelled

    def write(self) -> None:
        meter = self.meter
        totals = self.totals()
        line = {"request_id": self.request_id, **self.fields,
                "ddb_requests": meter.total_requests, "ddb_rcu": meter.read_capacity,
                "ddb_wcu": meter.write_capacity,
                "throttles": totals.get(THROTTLE, 0), "retries": totals.get(RETRY, 0)}
        if self.cancellations:
            line["cancellations"] = self.cancellations
        line["metrics"] = totals
        logger.info(self.event, **line)
        if self.counts:  # most scopes count nothing, so have no label to write a line for
            for label, metrics in self.by_label().items():
                logger.info("metrics", request_id=self.request_id, metrics=metrics, label=label)


_scope: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("tems_telemetry_scope", default=None)
_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("tems_request_id", default=None)


@contextmanager
def scope(event: str, *, request_id: str | None = None, ask_capacity: bool = False) -> Iterator[Scope]:
    """Collect what the code inside does and write it as one line named ``event`` when it ends (also when it
    raises). ``ask_capacity``: every DynamoDB request asks for its consumed capacity (see ``tems.metering``)."""
    with metered(ask_capacity=ask_capacity) as meter:
        current = Scope(event=event, request_id=request_id, meter=meter)
        token = _scope.set(current)
        id_token = _request_id.set(request_id) if request_id is not None else None
        try:
            yield current
        finally:
            _scope.reset(token)
            if id_token is not None:
                _request_id.reset(id_token)
            current.write()


@contextmanager
def acting_for(request_id: str | None) -> Iterator[None]:
    """Log lines and outbox messages of the code inside carry ``request_id``: the relay handling a message
    acts for the request that wrote it, so a tap can be followed from the browser to the mail."""
    token = _request_id.set(request_id)
    try:
        yield
    finally:
        _request_id.reset(token)


def current_request_id() -> str | None:
    return _request_id.get()


def count(metric: str, *, label: str | None = None, n: int = 1) -> None:
    current = _scope.get()
    if current is not None:
        current.count(metric, label, n)


def measure(metric: str, value: float) -> None:
    current = _scope.get()
    if current is not None:
        current.values[metric] = value


def note(**fields: Any) -> None:
    """Add fields to the current scope's line (the last value of a field stands)."""
    current = _scope.get()
    if current is not None:
        current.fields.update(fields)


def note_cancellation(reasons: dict[str, Any]) -> None:
    """A transaction was cancelled: its reasons by label go on the line, conflicts and throttles are counted."""
    current = _scope.get()
    if current is None:
        return
    codes = {label: reason.code for label, reason in reasons.items()}
    with current._lock:
        current.cancellations.append(codes)
    for label, code in codes.items():
        metric = _REASON_METRICS.get(code)
        if metric is not None:
            current.count(metric, label)


# DynamoDB's cancellation reason codes (tems.transactions imports this module, so they are spelled here).
_REASON_METRICS = {"TransactionConflict": TRANSACTION_CONFLICT, "ThrottlingError": THROTTLE}


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()``), to a tenth."""
    return round((time.perf_counter() - started) * 1000, 1)
