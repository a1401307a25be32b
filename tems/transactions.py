"""TransactWrite with named items, so a cancellation says *which* condition failed.

PynamoDB does not send items in the order they were added: it sends condition checks, then deletes, then puts,
then updates, and DynamoDB's ``CancellationReasons`` follow that sent order. ``LabelledTransaction`` records the
same order, so ``TransactionCancelled.reasons`` is keyed by the labels the caller chose, never by a guessed index.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pynamodb.exceptions import TransactWriteError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from tems.dynamo import transaction_connection

# PynamoDB's send order (pynamodb.connection.base.Connection.transact_write_items).
_SEND_ORDER = ("condition_check", "delete", "put", "update")

CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailed"
TRANSACTION_CONFLICT = "TransactionConflict"

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
        """Another transaction touched an item at the same time: nothing is wrong, try again."""
        return any(reason.code == TRANSACTION_CONFLICT for reason in self.reasons.values())


class LabelledTransaction:
    """Collect writes by label, then ``commit()`` them as one TransactWriteItems (all or nothing)."""

    def __init__(self) -> None:
        self._ops: dict[str, list[tuple[str, Callable[[TransactWrite], None]]]] = {kind: [] for kind in _SEND_ORDER}
        self._labels: set[str] = set()

    def _add(self, kind: str, label: str, apply: Callable[[TransactWrite], None]) -> None:
        if label in self._labels:
            raise ValueError(f"transaction label {label!r} used twice")
        self._labels.add(label)
        self._ops[kind].append((label, apply))

    def condition_check(self, label: str, model_cls: type[Model], hash_key: str, range_key: str | None,
                        condition: Condition) -> None:
        self._add("condition_check", label,
                  lambda t: t.condition_check(model_cls, hash_key, range_key, condition=condition))

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

    @property
    def sent_order(self) -> list[str]:
        """Labels in the order DynamoDB receives (and reports) them."""
        return [label for kind in _SEND_ORDER for label, _ in self._ops[kind]]

    def commit(self) -> None:
        """Send everything as one request. Raises TransactionCancelled with the reasons by label."""
        order = self.sent_order
        try:
            with TransactWrite(connection=transaction_connection()) as transaction:
                for kind in _SEND_ORDER:
                    for _, apply in self._ops[kind]:
                        apply(transaction)
        except TransactWriteError as error:
            if _response_code(error) != "TransactionCanceledException":
                raise
            reasons = {
                label: Reason(reason.code, reason.message, reason.raw_item)
                for label, reason in zip(order, error.cancellation_reasons)
                if reason is not None
            }
            raise TransactionCancelled(reasons, error) from error


def _response_code(error: TransactWriteError) -> str | None:
    # A transport failure (the SDK's retries ran out on timeouts) has no response, so no code to read.
    try:
        return error.cause_response_code
    except AttributeError:
        return None


def retry_on_conflict(attempt: Callable[[], T], *, attempts: int = 6, base_delay: float = 0.01,
                      max_delay: float = 0.4, sleep: Callable[[float], None] = time.sleep,
                      on_exhausted: Callable[[TransactionCancelled], Exception]) -> T:
    """Run ``attempt`` again while DynamoDB reports a TransactionConflict, with full-jitter backoff.

    Any other cancellation propagates at once. After ``attempts`` conflicts, raises ``on_exhausted(last)``
    (a "busy, try again" domain error), never a 500.
    """
    last: TransactionCancelled | None = None
    for n in range(attempts):
        try:
            return attempt()
        except TransactionCancelled as cancelled:
            if not cancelled.is_conflict:
                raise
            last = cancelled
            sleep(random.uniform(0, min(max_delay, base_delay * 2**n)))
    assert last is not None
    raise on_exhausted(last) from last
