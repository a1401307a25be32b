"""Writes of the inventory app, one module per capability. Every promise is kept by a DynamoDB condition, never
by a prior read.

Each successful change of an item is ONE TransactWriteItems of
  - the item itself, conditioned on the version the change was computed from, which it bumps by one, and
  - its history entry ``CHANGE#<new version>`` (who, when, before, after, reason), put only if absent,
(plus, for an adjustment, the COMPLETED idempotency record of the tap). So history can never miss a change or
record one that did not happen, and the versions in history are contiguous.

Adjustments ("sold 2") need no version from the client, but their history entry needs the version they
create, and a transaction cannot compute one item's key from another item's new value. So the service reads
the item (strongly consistent), computes version+1, and conditions the write on that version *and* on the
stock guard. If only the version moved (another change landed first), nothing is wrong: it re-reads and tries
again, so concurrent adjustments all apply. If the guard failed, the failed write's own ALL_OLD image says
how much is in stock and the adjustment is refused with that number.

This package re-exports every public name, so ``from inventory import services`` reads as it always did.
"""

from inventory.errors import InventoryError
from inventory.selectors import item_get
from inventory.services.adjustments import Adjustment, adjustment_fingerprint, item_adjust
from inventory.services.item_versions import (
    CHANGE,
    DEFAULT_POLICY,
    IDEMPOTENCY,
    ITEM,
    MAX_QUANTITY,
    METRICS,
    METRICS_ATTEMPTS,
    RetryPolicy,
)
from inventory.services.items import item_create, item_modify, item_update
from inventory.services.metrics import OperationStats, metrics_record
from inventory.services.stock_counts import (
    IMPORT_POLICY,
    IMPORT_ROWS_PER_TRANSACTION,
    MAX_IMPORT_BYTES,
    MAX_IMPORT_ROWS,
    ImportRow,
    stock_import,
)

__all__ = [
    "InventoryError",
    "item_get",
    "ITEM",
    "CHANGE",
    "IDEMPOTENCY",
    "METRICS",
    "METRICS_ATTEMPTS",
    "MAX_QUANTITY",
    "RetryPolicy",
    "DEFAULT_POLICY",
    "OperationStats",
    "metrics_record",
    "item_create",
    "item_update",
    "item_modify",
    "ImportRow",
    "MAX_IMPORT_ROWS",
    "MAX_IMPORT_BYTES",
    "IMPORT_ROWS_PER_TRANSACTION",
    "IMPORT_POLICY",
    "stock_import",
    "Adjustment",
    "adjustment_fingerprint",
    "item_adjust",
]
