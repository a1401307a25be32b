"""No adjustment takes an item past MAX_QUANTITY: the bound is in the write's condition (DynamoDB Local)."""

import uuid

import pytest

from inventory import selectors, services
from inventory.errors import InventoryError
from inventory.services import MAX_QUANTITY
from inventory.services import adjustments as adjustments_module
from tests.helpers import assert_problem


def test_increment_past_the_maximum_is_refused_and_nothing_changes(ddb):
    services.item_create(sku="FULL", name="Full", quantity=MAX_QUANTITY - 5, actor="ana")
    with pytest.raises(InventoryError) as refused:
        services.item_adjust(sku="FULL", delta=6, reason="delivery", actor="ana")
    assert refused.value.code == "invalid" and "room for 5" in refused.value.detail
    item = selectors.item_get(sku="FULL")
    assert int(item.quantity) == MAX_QUANTITY - 5 and int(item.version) == 1
    assert services.item_adjust(sku="FULL", delta=5, reason="delivery", actor="ana").quantity == MAX_QUANTITY


def test_the_bound_is_the_writes_condition_not_a_prior_read(ddb, monkeypatch):
    """Even if the read is stale (it said 0 in stock), the write itself refuses to pass the maximum."""
    services.item_create(sku="RACE", name="Race", quantity=MAX_QUANTITY - 1, actor="ana")
    real_get = services.item_get

    def stale_get(*, sku):
        item = real_get(sku=sku)
        item.quantity = 0
        return item

    monkeypatch.setattr(adjustments_module, "item_get", stale_get)
    with pytest.raises(InventoryError) as refused:
        services.item_adjust(sku="RACE", delta=2, reason="delivery", actor="ana")
    assert refused.value.code == "invalid"
    assert int(selectors.item_get(sku="RACE").quantity) == MAX_QUANTITY - 1


def test_api_and_page_answer_400(ddb, staff_client):
    services.item_create(sku="FULL", name="Full", quantity=MAX_QUANTITY, actor="ana")
    response = staff_client.post("/api/inventory/FULL/adjustments", data={"delta": 1}, content_type="application/json",
                                 HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    assert "delta" in assert_problem(response, 400)["errors"]
    page = staff_client.post("/inventory/FULL/adjust/", {"direction": "add", "amount": "1", "reason": "x",
                                                         "idempotency_key": str(uuid.uuid4())})
    assert page.status_code == 400 and "room for 0" in page.content.decode()
    assert int(selectors.item_get(sku="FULL").quantity) == MAX_QUANTITY
