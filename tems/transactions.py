"""TransactWrite with named items, so a cancellation says *which* condition failed.

PynamoDB does not send items in the order they were added: it sends condition checks, then deletes, then puts,
then updates, and DynamoDB's ``CancellationReasons`` follow that sent order. ``LabelledTransaction`` records the
same order, so ``TransactionCancelled.reasons`` is keyed by the labels the caller chose, never by a guessed index.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, TypeVar

from pynamodb.connection import Connection
from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from tems import telemetry
from tems.dynamo import transaction_connection

# PynamoDB's send order (pynamodb.connection.base.Connection.transact_write_items).
_SEND_ORDER = ("condition_check", "delete", "put", "update")

CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailed"
TRANSACTION_CONFLICT = "TransactionConflict"
# A transaction whose item's partition was over its throughput is cancelled with this reason, and botocore does
# not retry a cancelled transaction: like a conflict it says nothing about the data, so it is retried the same way.
THROTTLING_ERROR = "ThrottlingError"
TRANSIENT_REASONS = frozenset({TRANSACTION_CONFLICT, THROTTLING_ERROR})
# A single-item write's refused condition arrives as an exception code, not a cancellation reason.
CONDITIONAL_CHECK_FAILED_EXCEPTION = "ConditionalCheckFailedException"
TRANSACTION_CANCELED_EXCEPTION = "TransactionCanceledException"

T = TypeVar("T")


@dataclass(frozen=True)
class Reason:
    code: str
    message: str | None
    raw_item: dict[str, Any] | None  # the item as it was, when the write asked for ALL_OLD on failure


class TransactionCancelled(Exception):
    """DynamoDB cancelled the transaction; ``reasons`` maps each failed item's label to why."""

    def __init__(self, reasons: dict[str, Reason], cause: TransactWriteError):
        super().__init__(", ".join(f"{label}: {reason.code}" for label, reason in reasons.items()) or str(cause))
        self.reasons = reasons
        self.cause = cause

    def failed(self, label: str, code: str = CONDITIONAL_CHECK_FAILED) -> bool:
        reason = self.reasons.get(label)
        return reason is not None and reason.code == code

    @property
    def is_conflict(self) -> bool:
        """Another transaction touched an item at the same time, or a partition was throttled: nothing is wrong
        with the request, try again after a pause."""
        return any(reason.code in TRANSIENT_REASONS for reason in self.reasons.values())

    @property
    def only_conflicts(self) -> bool:
        """A conflict and no failed condition: every read the transaction was built from may still be true."""
        return self.is_conflict and not any(reason.code == CONDITIONAL_CHECK_FAILED for reason in self.reasons.values())

    @property
    def codes(self) -> set[str]:
        """The distinct reasons, for counting a refused write once however many of its items failed."""
        return {reason.code for reason in self.reasons.values()}


class LabelledTransaction:
    """Collect writes by label, then ``commit()`` them as one TransactWriteItems (all or nothing)."""

    def __init__(self) -> None:
        self._ops: dict[str, list[tuple[str, Callable[[TransactWrite], None]]]] = {kind: [] for kind in _SEND_ORDER}
        self._labels: set[str] = set()
        self._counts: dict[str, tuple[Model, dict[str, int], dict[str, Any]]] = {}

    def _add(self, kind: str, label: str, apply: Callable[[TransactWrite], None]) -> None:
        if label in self._labels:
            raise ValueError(f"transaction label {label!r} used twice")
        self._labels.add(label)
        self._ops[kind].append((label, apply))

    def condition_check(self, label: str, model_cls: type[Model], hash_key: str, range_key: str | None,
                        condition: Condition, *, return_old_on_failure: bool = False) -> None:
        def apply(t: TransactWrite) -> None:
            t.condition_check(model_cls, hash_key, range_key, condition=condition)
            if return_old_on_failure:
                # PynamoDB's condition_check has no return_values; the item it just queued is a plain dict.
                t._condition_check_items[-1]["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"

        self._add("condition_check", label, apply)

    def delete(self, label: str, model: Model, condition: Condition | None = None, *,
               add_version_condition: bool = True) -> None:
        self._add("delete", label,
                  lambda t: t.delete(model, condition=condition, add_version_condition=add_version_condition))

    def save(self, label: str, model: Model, condition: Condition | None = None, *,
             return_old_on_failure: bool = False) -> None:
        return_values = "ALL_OLD" if return_old_on_failure else None
        self._add("put", label, lambda t: t.save(model, condition=condition, return_values=return_values))

    def update(self, label: str, model: Model, actions: list[Action], condition: Condition | None = None, *,
               return_old_on_failure: bool = False, add_version_condition: bool = True) -> None:
        return_values = "ALL_OLD" if return_old_on_failure else None
        self._add("update", label, lambda t: t.update(model, actions=actions, condition=condition,
                                                      return_values=return_values,
                                                      add_version_condition=add_version_condition))

    def add_counts(self, label: str, model: Model, counts: dict[str, int], *,
                   sets: dict[str, Any] | None = None) -> None:
        """ADD ``counts`` (attribute name: amount) to ``model``'s item, merged with whatever was counted under
        ``label`` before: a transaction may write an item once, and several of its changes may count on the same
        item (a cancel and the offer it makes). No condition: an ADD applies to whatever is there, so counting
        never refuses the change it counts. ``sets`` are written alongside (SET), the same on every call."""
        pending = self._counts.get(label)
        if pending is None:
            pending = self._counts[label] = (model, {}, dict(sets or {}))
            self._add("update", label, lambda t: t.update(
                pending[0], actions=[*(getattr(type(pending[0]), name).add(amount)
                                       for name, amount in sorted(pending[1].items()) if amount),
                                     *(getattr(type(pending[0]), name).set(value)
                                       for name, value in sorted(pending[2].items()))],
                add_version_condition=False))
        for name, amount in counts.items():
            pending[1][name] = pending[1].get(name, 0) + amount

    @property
    def sent_order(self) -> list[str]:
        """Labels in the order DynamoDB receives (and reports) them."""
        return [label for kind in _SEND_ORDER for label, _ in self._ops[kind]]

    def _send(self, connection: Connection) -> None:
        # PynamoDB asks for ReturnConsumedCapacity TOTAL on every request it is not told otherwise about; nothing
        # reads it from a transaction, and working it out makes the database answer later. tems.metering still
        # asks for it while something meters.
        with TransactWrite(connection=connection, return_consumed_capacity="NONE") as transaction:
            for kind in _SEND_ORDER:
                for _, apply in self._ops[kind]:
                    apply(transaction)

    def transact_items(self) -> list[dict[str, Any]]:
        """The ``TransactItems`` that ``commit()`` would send (DynamoDB's JSON, in the sent order), built by
        PynamoDB exactly as for ``commit()`` but not sent: to measure each item's size, or to send the very
        same write through another client (the benchmark's raw boto3 floor)."""
        capture = _CapturingConnection()
        try:
            self._send(capture)
        except _Captured as captured:
            return captured.request["TransactItems"]
        raise AssertionError("PynamoDB sent no TransactWriteItems")

    def commit(self) -> None:
        """Send everything as one request. Raises TransactionCancelled with the reasons by label."""
        order = self.sent_order
        try:
            self._send(transaction_connection())
        except TransactWriteError as error:
            if response_code(error) != TRANSACTION_CANCELED_EXCEPTION:
                raise
            reasons = {
                label: Reason(reason.code, reason.message, reason.raw_item)
                for label, reason in zip(order, error.cancellation_reasons, strict=False)
                if reason is not None
            }
            telemetry.note_cancellation(reasons)
            raise TransactionCancelled(reasons, error) from error


class _Captured(Exception):
    """Not an error: how the request leaves a transaction that is not to be sent."""

    def __init__(self, request: dict[str, Any]):
        super().__init__("captured")
        self.request = request


class _CapturingConnection(Connection):
    """A PynamoDB connection that hands back the request it was asked to send instead of sending it.

    It raises, so PynamoDB does not go on as after a commit (it would bump the models' version attributes).
    """

    def dispatch(self, operation_name: str, operation_kwargs: dict[str, Any]) -> dict[str, Any]:
        raise _Captured(operation_kwargs)


# Errors botocore retries on its own, reaching the app only when it gave up (None: a transport failure).
GAVE_UP = frozenset({"InternalServerError", "ServiceUnavailable", "ProvisionedThroughputExceededException",
                     "ThrottlingException", "RequestLimitExceeded", "TransactionInProgressException", None})
# The error codes after which a single write is tried again after a pause, as after a conflict: botocore gave up
# (throttled past its retries), or the item was held by a transaction (TransactionConflictException). None, a
# transport failure, leaves the outcome unknown: the retry's own condition then finds out whether it was applied.
# A cancelled transaction's reasons are TRANSIENT_REASONS instead.
TRANSIENT = GAVE_UP | {"TransactionConflictException"}


def response_code(error: PynamoDBException) -> str | None:
    """DynamoDB's error code behind a PynamoDB exception, or None for a transport failure.

    A transport failure (the SDK's retries ran out on timeouts) has no response, so no code to read.
    """
    try:
        return error.cause_response_code
    except AttributeError:
        return None


UNKNOWN_OUTCOME = "unknown outcome"


class Committable(Protocol):
    """A ``LabelledTransaction``, or anything that commits one the same way (raising ``TransactionCancelled``)."""

    def commit(self) -> None: ...


def commit_round(transaction: Committable) -> TransactionCancelled | Literal["unknown outcome"] | None:
    """Commit one round of a write loop: None when it was applied; its ``TransactionCancelled`` when a condition
    or a conflict refused it; ``UNKNOWN_OUTCOME`` when botocore gave up retrying or the answer was lost. Every
    item of such a round is conditioned, so the caller's next round finds out whether an unknown one was applied
    (its record replays it, its conditions refuse it again). Any other error is raised."""
    try:
        transaction.commit()
    except TransactWriteError as error:
        if response_code(error) not in TRANSIENT:
            raise
        return UNKNOWN_OUTCOME
    except TransactionCancelled as cancelled:
        return cancelled
    return None


def is_conditional_check_failed(error: PynamoDBException) -> bool:
    """A single-item write (PutItem, UpdateItem, DeleteItem) was refused by its condition."""
    return response_code(error) == CONDITIONAL_CHECK_FAILED_EXCEPTION


# --- retrying -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and full jitter: retry ``n`` sleeps a random time in
    ``[0, min(max_delay, base_delay * 2**n)]``.

    Full jitter spreads colliding writers apart instead of waking them in lockstep; the bound turns a table too
    hot to clear in time into the app's "busy, try again" error, never a 500. ``sleep`` and ``uniform`` are
    injectable so tests need neither real time nor luck. Each service names its policy and says why its numbers.
    """

    attempts: int = 6
    base_delay: float = 0.01
    max_delay: float = 0.4
    sleep: Callable[[float], None] = time.sleep
    uniform: Callable[[float, float], float] = random.uniform

    def delay(self, retry: int) -> float:
        return self.uniform(0, min(self.max_delay, self.base_delay * 2**retry))

    def backoff(self, retry: int) -> None:
        """Pause before retry number ``retry`` (0 for the first); every retry loop pauses here, so it is where
        retries are counted."""
        telemetry.count(telemetry.RETRY)
        self.sleep(self.delay(retry))

    def sleeping(self, sleep: Callable[[float], None]) -> RetryPolicy:
        """This policy with another ``sleep`` (a service's injectable one)."""
        return self if sleep is self.sleep else replace(self, sleep=sleep)

    def pauses(self, busy: Callable[[], Exception]) -> Backoff:
        """A backoff counter for a hand-written loop that also retries for reasons other than conflicts."""
        return Backoff(self, busy)

    def run(self, attempt: Callable[[], T], *, busy: Callable[[TransactionCancelled], Exception]) -> T:
        """Run ``attempt`` again while DynamoDB reports a TransactionConflict, backing off between tries.

        Any other cancellation propagates at once. After ``attempts`` conflicts, raises ``busy(last)``.
        """
        last: TransactionCancelled | None = None
        for retry in range(self.attempts):
            if retry:
                # Only before another attempt: a pause after the last one would only delay the "busy" answer.
                self.backoff(retry - 1)
            try:
                return attempt()
            except TransactionCancelled as cancelled:
                if not cancelled.is_conflict:
                    raise
                last = cancelled
            except TransactWriteError as error:
                # An error botocore stopped retrying (its retry quota is shared by the client and runs out when
                # many requests fail at once): the writes retried this way are conditioned, so again is safe.
                if response_code(error) not in GAVE_UP:
                    raise
                last = TransactionCancelled({}, error)
        assert last is not None
        raise busy(last) from last


class Backoff:
    """Counts the pauses of one retry loop; ``pause()`` sleeps the policy's next delay or, past its bound,
    raises the caller's "busy" error."""

    def __init__(self, policy: RetryPolicy, busy: Callable[[], Exception]) -> None:
        self.policy = policy
        self.busy = busy
        self.retries = 0

    def pause(self) -> None:
        if self.retries >= self.policy.attempts:
            raise self.busy()
        self.policy.backoff(self.retries)
        self.retries += 1
