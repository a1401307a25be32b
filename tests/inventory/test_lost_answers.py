"""Every inventory write survives losing its answer: the SDK's retry neither doubles it nor refuses it."""

import json

from inventory import selectors, services
from inventory.models import InventoryItem, OperationMetrics
from tests.helpers import assert_invariants_clean
from tests.support.faults import LOST, Fault, inject

METRICS = OperationMetrics.PK


def touches(fragment: str):
    return lambda params: fragment in json.dumps(params)


def metrics(operation: str) -> OperationMetrics:
    return OperationMetrics.get(*OperationMetrics.key_for(operation), consistent_read=True)


def test_create_answer_lost_is_created_once(ddb):
    with inject(Fault(LOST, times=1)) as faults:
        item = services.item_create(sku="MUG", name="Mug", quantity=3, actor="ana")
    assert faults.fired(LOST) and item.version == 1
    assert_invariants_clean()


def test_adjustment_answer_lost_is_applied_once_and_replays(item):
    key = "5f0c3c4e-52b1-4a8c-9f6c-0d2b0b8b2a10"
    with inject(Fault(LOST, times=1, when=touches(InventoryItem.pk_for(item.sku)))) as faults:
        first = services.item_adjust(sku=item.sku, delta=-2, reason="sold", actor="ana", idempotency_key=key)
    assert faults.fired(LOST)
    assert (first.quantity, first.version, first.replayed) == (8, 2, False)
    again = services.item_adjust(sku=item.sku, delta=-2, reason="sold", actor="ana", idempotency_key=key)
    assert again.replayed and again.response.body == first.response.body
    assert int(selectors.item_get(sku=item.sku).quantity) == 8
    assert_invariants_clean()


def test_edit_answer_lost_is_saved_not_stale(item):
    with inject(Fault(LOST, times=1, when=touches(InventoryItem.pk_for(item.sku)))):
        services.item_update(sku=item.sku, expected_version=1, name="Tee", description="", quantity=10,
                             location="A", actor="ana")
    stored = selectors.item_get(sku=item.sku)
    assert (stored.name, int(stored.version)) == ("Tee", 2)
    assert_invariants_clean()


def test_csv_import_answer_lost_counts_once(item):
    with inject(Fault(LOST, times=1, when=touches(InventoryItem.pk_for(item.sku)))):
        [row] = services.stock_import(csv_text=f"sku,quantity\n{item.sku},4\n", actor="ana")
    assert (row.outcome, row.before) == ("updated", 10)
    assert int(selectors.item_get(sku=item.sku).version) == 2
    assert_invariants_clean()


def test_metrics_answer_lost_counts_each_call_once(item):
    try:
        before = int(metrics("adjust").calls)
    except OperationMetrics.DoesNotExist:
        before = 0
    with inject(Fault(LOST, when=touches(METRICS))) as faults:
        for _ in range(3):
            services.item_adjust(sku=item.sku, delta=1, reason="received", actor="ana")
    assert faults.fired(LOST)
    stats = metrics("adjust")
    assert int(stats.calls) - before == 3 and int(stats.succeeded) == 3
