"""Per-operation counters (``OP#<operation>``): what each call cost and met, added with one ADD, never read first."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pynamodb.exceptions import PynamoDBException

from inventory.errors import InventoryError
from inventory.models import OperationMetrics
from inventory.services.item_versions import METRICS, METRICS_ATTEMPTS
from tems import transactions
from tems.clock import utcnow
from tems.metering import DynamoMeter, metered
from tems.transactions import CONDITIONAL_CHECK_FAILED, TRANSACTION_CONFLICT, LabelledTransaction, TransactionCancelled

logger = logging.getLogger(__name__)

# --- metrics ----------------------------------------------------------------------------------------------

@dataclass
class OperationStats:
    """What one call of an operation cost and met on its way; added to the operation's running totals."""

    operation: str
    condition_failures: int = 0
    transaction_conflicts: int = 0
    retries: int = 0
    exhausted: bool = False
    replayed: bool = False
    outcome: str = "error"  # "succeeded" | "refused" | "error"
    meter: DynamoMeter | None = field(default=None, repr=False)

    def backoff(self, policy: transactions.RetryPolicy, retry: int) -> None:
        """Count a lost race and pause as ``policy`` says before the next attempt."""
        self.retries += 1
        policy.backoff(retry)

    def gave_up(self, error: InventoryError) -> InventoryError:
        """Mark the call as having run out of attempts; returns ``error`` for the caller to raise."""
        self.exhausted = True
        return error

    def count_cancellation(self, cancelled: TransactionCancelled) -> None:
        # Per refused write, not per failed item: a lost race fails both the item's version check and the
        # history entry (the winner already wrote CHANGE#<that version>), and that is one conflict, not two.
        codes = cancelled.codes
        self.condition_failures += int(CONDITIONAL_CHECK_FAILED in codes)
        self.transaction_conflicts += int(TRANSACTION_CONFLICT in codes)


@contextmanager
def measured(operation: str) -> Iterator[OperationStats]:
    stats = OperationStats(operation)
    try:
        with metered() as meter:
            stats.meter = meter
            yield stats
        stats.outcome = "succeeded"
    except InventoryError:
        stats.outcome = "refused"
        raise
    finally:
        # Recorded after the operation's own requests, outside its meter: metrics must not bill the operation.
        metrics_record(stats=stats)


def metrics_record(*, stats: OperationStats) -> None:
    """Add one call's numbers to ``OP#<operation>`` with one unconditional ADD (no read), applied exactly once.

    A failure to record is logged and swallowed: losing a metric must never fail the change it describes.
    """
    meter = stats.meter or DynamoMeter()
    m = OperationMetrics
    actions = [
        m.operation.set(stats.operation),
        m.updated_at.set(utcnow()),
        m.calls.add(1),
        m.succeeded.add(int(stats.outcome == "succeeded")),
        m.refused.add(int(stats.outcome == "refused" and not stats.exhausted)),
        m.exhausted.add(int(stats.exhausted)),
        m.replays.add(int(stats.replayed)),
        m.condition_failures.add(stats.condition_failures),
        m.transaction_conflicts.add(stats.transaction_conflicts),
        m.retries.add(stats.retries),
        m.requests.add(meter.total_requests),
        m.write_capacity.add(meter.write_capacity),
        m.read_capacity.add(meter.read_capacity),
    ]
    def record() -> None:
        # A one-item TransactWriteItems rather than an UpdateItem: botocore repeats its ClientRequestToken on
        # its own retries, so an ADD whose answer was lost is not added a second time (an UpdateItem would be).
        transaction = LabelledTransaction()
        transaction.update(METRICS, OperationMetrics(*OperationMetrics.key_for(stats.operation)), actions=actions)
        transaction.commit()

    try:
        # Concurrent recorders of one operation conflict as transactions do: go again, bounded.
        transactions.RetryPolicy(attempts=METRICS_ATTEMPTS).run(record, busy=lambda last: last)
    except (PynamoDBException, TransactionCancelled):
        logger.warning("could not record inventory metrics for %s", stats.operation, exc_info=True)
