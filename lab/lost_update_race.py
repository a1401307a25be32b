"""The lost-update race of the double-click lab: N writers each sell k units of one item at the same moment.

It runs ``lab.techniques.inventory`` (the same code as the concurrency tests and the bench) on a scratch item,
reads the result strongly consistently, then deletes the item and its history so the lab leaves no stock behind.
Conflicts and retries come from the operations' metrics items, read before and after the run.
"""

from __future__ import annotations

import uuid
from typing import Any

from inventory import selectors, services
from inventory.errors import InventoryError
from inventory.models import InventoryItem, OperationMetrics
from lab.machinery import fire_concurrently, scratch_delete
from lab.techniques.inventory import TECHNIQUES

# Spare stock on top of what the writers sell, so a correct technique never has to refuse a sale here.
SPARE_STOCK = 10


def _counters(operation: str | None) -> dict[str, int]:
    if operation is None:
        return {"condition_failures": 0, "retries": 0}
    try:
        metrics = OperationMetrics.get(*OperationMetrics.key_for(operation), consistent_read=True)
    except OperationMetrics.DoesNotExist:
        return {"condition_failures": 0, "retries": 0}
    return {"condition_failures": int(metrics.condition_failures), "retries": int(metrics.retries)}


def lost_update_race(*, technique: str, writers: int, units_each: int) -> dict[str, Any]:
    """Every writer sells ``units_each`` once, all at once; report expected vs. stored stock."""
    if technique not in TECHNIQUES:
        raise InventoryError("invalid", f"Unknown technique {technique!r}.", errors={"technique": ["Unknown."]})
    function, operation = TECHNIQUES[technique].add, TECHNIQUES[technique].operation
    sku = f"LAB-{uuid.uuid4().hex[:10].upper()}"
    initial = writers * units_each + SPARE_STOCK
    services.item_create(sku=sku, name="Lab scratch stock", quantity=initial, actor="lab")
    before = _counters(operation)
    fired = fire_concurrently([
        (lambda n=n: function(sku=sku, delta=-units_each, actor=f"lab-writer-{n}")) for n in range(writers)
    ])
    final = int(selectors.item_get(sku=sku).quantity)
    after = _counters(operation)
    scratch_delete(partitions=[InventoryItem.pk_for(sku)])
    sold = sum(1 for outcome in fired.outcomes if outcome.error is None) * units_each
    expected = initial - sold
    return {
        "technique": technique,
        "writers": writers,
        "units_each": units_each,
        "initial_quantity": initial,
        "expected_quantity": expected,
        "final_quantity": final,
        "lost_units": final - expected,
        "conflicts": after["condition_failures"] - before["condition_failures"],
        "retries": after["retries"] - before["retries"],
        "failed_writers": sum(1 for outcome in fired.outcomes if outcome.error is not None),
        "dynamodb_requests": fired.dynamodb_requests,
        "consumed_wcu": fired.consumed_wcu,
        "elapsed_ms": fired.elapsed_ms,
    }

