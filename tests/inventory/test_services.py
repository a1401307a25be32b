"""Inventory services on DynamoDB Local: every change is one transaction with its history entry."""

from __future__ import annotations

import json

import pytest

from inventory import item_answers, selectors, services
from inventory.errors import InventoryError
from inventory.models import InventoryChange, InventoryItem
from inventory.services import adjustments as adjustments_module
from lab.techniques import inventory as techniques
from tems.errors import DomainError
from tests.helpers import assert_invariants_clean, broken_invariants

KEY = "7d3c1e0a-5b8f-4c2d-9e6a-1f2b3c4d5e6f"


def edit(**overrides):
    values = {"sku": "TSHIRT-M", "expected_version": 1, "name": "T-shirt (M)", "description": "Navy, logo front",
              "quantity": 10, "location": "Store room A", "actor": "bo"}
    return services.item_update(**{**values, **overrides})


# --- create -----------------------------------------------------------------------------------------------

def test_create_writes_the_item_and_its_first_change(item):
    stored = selectors.item_get(sku="TSHIRT-M")
    assert item_answers.item_to_dict(stored) | {"updated_at": None} == {
        "sku": "TSHIRT-M", "name": "T-shirt (M)", "description": "Navy, logo front", "quantity": 10,
        "location": "Store room A", "version": 1, "updated_at": None, "updated_by": "ana", "team": None,
    }
    [change] = selectors.item_history(sku="TSHIRT-M")
    assert (change.sk, change.kind, change.changed_by, change.before) == ("CHANGE#0000000001", "create", "ana", None)
    assert change.after_values == stored.snapshot()


def test_existing_sku_is_refused_by_the_condition_and_left_alone(item):
    with pytest.raises(InventoryError) as caught:
        services.item_create(sku="TSHIRT-M", name="Impostor", quantity=99, actor="eve")
    assert caught.value.code == "conflict" and caught.value.status == 409
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, int(stored.quantity), int(stored.version)) == ("T-shirt (M)", 10, 1)
    assert len(selectors.item_history(sku="TSHIRT-M")) == 1


def test_listing_is_in_sku_order(ddb):
    for sku in ("MUG", "BADGE", "LANYARD"):
        services.item_create(sku=sku, name=sku.title(), actor="ana")
    assert [i.sku for i in selectors.item_list()] == ["BADGE", "LANYARD", "MUG"]


def test_negative_quantity_is_invalid(ddb):
    with pytest.raises(InventoryError) as caught:
        services.item_create(sku="X", name="X", quantity=-1, actor="ana")
    assert caught.value.code == "invalid"


# --- versioned edit ---------------------------------------------------------------------------------------

def test_edit_bumps_version_and_records_before_and_after(item):
    updated = edit(name="T-shirt (medium)", quantity=12)
    assert int(updated.version) == 2
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, int(stored.quantity), stored.updated_by, int(stored.version)) == (
        "T-shirt (medium)", 12, "bo", 2)
    latest = selectors.item_history(sku="TSHIRT-M")[0]
    assert (latest.sk, latest.kind, latest.changed_by) == ("CHANGE#0000000002", "edit", "bo")
    assert latest.changed_fields == [("name", "T-shirt (M)", "T-shirt (medium)"), ("quantity", 10, 12)]


def test_stale_edit_is_refused_with_current_values_and_what_changed(item):
    edit(location="Store room B", actor="cy")
    with pytest.raises(InventoryError) as caught:
        edit(name="Mine", actor="bo")
    error = caught.value
    assert error.code == "precondition_failed" and error.status == 412
    assert "cy changed this item" in error.detail and "Nothing of yours was saved" in error.detail
    assert error.extra["current"]["location"] == "Store room B" and error.extra["current"]["version"] == 2
    assert [(c["version"], c["changed_by"]) for c in error.extra["changes"]] == [(2, "cy")]
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, int(stored.version)) == ("T-shirt (M)", 2)


def test_edit_of_missing_item_is_not_found(ddb):
    with pytest.raises(InventoryError) as caught:
        edit(sku="NOPE")
    assert caught.value.code == "not_found"


# --- adjustments ------------------------------------------------------------------------------------------

def test_adjustment_applies_with_history_and_reason(item):
    result = services.item_adjust(sku="TSHIRT-M", delta=-2, reason="sold at the fair", actor="bo")
    assert (result.quantity, result.version, result.replayed) == (8, 2, False)
    assert json.loads(result.response.body) == {"quantity": 8, "version": 2}
    latest = selectors.item_history(sku="TSHIRT-M")[0]
    assert (latest.kind, int(latest.delta), latest.reason) == ("adjust", -2, "sold at the fair")
    assert (latest.before_values["quantity"], latest.after_values["quantity"]) == (10, 8)


def test_adjustment_that_would_go_negative_shows_stock_on_hand(item):
    with pytest.raises(InventoryError) as caught:
        services.item_adjust(sku="TSHIRT-M", delta=-11, reason="sold", actor="bo")
    assert caught.value.code == "conflict"
    assert caught.value.detail == "Only 10 in stock: cannot take 11."
    assert caught.value.extra["on_hand"] == 10
    assert int(selectors.item_get(sku="TSHIRT-M").version) == 1


def test_taking_exactly_what_is_there_is_allowed(item):
    assert services.item_adjust(sku="TSHIRT-M", delta=-10, reason="sold out", actor="bo").quantity == 0


def test_zero_delta_is_invalid_and_missing_item_not_found(item):
    with pytest.raises(InventoryError) as zero:
        services.item_adjust(sku="TSHIRT-M", delta=0, reason="", actor="bo")
    assert zero.value.code == "invalid"
    with pytest.raises(InventoryError) as missing:
        services.item_adjust(sku="NOPE", delta=1, reason="", actor="bo")
    assert missing.value.code == "not_found"


def test_retried_adjustment_is_applied_once_and_replayed_byte_for_byte(item):
    first = services.item_adjust(sku="TSHIRT-M", delta=-2, reason="sold", actor="bo", idempotency_key=KEY)
    services.item_adjust(sku="TSHIRT-M", delta=5, reason="received", actor="cy")  # moves on meanwhile
    again = services.item_adjust(sku="TSHIRT-M", delta=-2, reason="sold", actor="bo", idempotency_key=KEY)
    assert again.replayed and again.response == first.response
    assert (again.quantity, again.version) == (8, 2)
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 13
    adjust = {m.operation: m for m in selectors.metrics_list()}["adjust"]
    assert (int(adjust.calls), int(adjust.replays)) == (3, 1)


def test_same_key_for_another_request_is_422(item):
    services.item_adjust(sku="TSHIRT-M", delta=-2, reason="sold", actor="bo", idempotency_key=KEY)
    with pytest.raises(DomainError) as caught:
        services.item_adjust(sku="TSHIRT-M", delta=-3, reason="sold", actor="bo", idempotency_key=KEY)
    assert caught.value.status == 422
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 8


def test_a_key_belongs_to_its_user(item):
    services.item_adjust(sku="TSHIRT-M", delta=-2, reason="sold", actor="bo", idempotency_key=KEY)
    other = services.item_adjust(sku="TSHIRT-M", delta=-2, reason="sold", actor="cy", idempotency_key=KEY)
    assert not other.replayed and other.quantity == 6


def test_adjustment_that_loses_a_race_retries_from_a_fresh_read(item, fake_time, monkeypatch):
    """Someone else's change lands between our read and our write: we go round again, and both apply."""
    real_get = selectors.item_get
    calls = {"n": 0}

    def get_then_race(**kwargs):
        stored = real_get(**kwargs)
        calls["n"] += 1
        if calls["n"] == 1:
            services.item_adjust(sku="TSHIRT-M", delta=50, reason="received", actor="cy")
        return stored

    monkeypatch.setattr(adjustments_module, "item_get", get_then_race)
    policy = services.RetryPolicy(sleep=fake_time.sleep, uniform=fake_time.uniform)
    result = services.item_adjust(sku="TSHIRT-M", delta=-2, reason="sold", actor="bo", policy=policy)
    assert (result.quantity, result.version) == (58, 3)
    assert fake_time.caps == [0.01]  # one backoff, from the first step of the schedule
    metrics = {m.operation: m for m in selectors.metrics_list()}["adjust"]
    assert (int(metrics.retries), int(metrics.condition_failures), int(metrics.succeeded)) == (1, 1, 2)


# --- programmatic read-modify-write -----------------------------------------------------------------------

def test_modify_retries_with_backoff_and_full_jitter_then_applies(item, fake_time):
    raced = {"n": 0}

    def add_one_but_get_overtaken_twice(stored: dict) -> dict:
        if raced["n"] < 2:
            raced["n"] += 1
            services.item_adjust(sku="TSHIRT-M", delta=1, reason="interloper", actor="cy")
        return {"quantity": stored["quantity"] + 1}

    policy = services.RetryPolicy(sleep=fake_time.sleep, uniform=fake_time.uniform)
    written = services.item_modify(sku="TSHIRT-M", change=add_one_but_get_overtaken_twice, actor="bo",
                                   policy=policy)
    assert int(written.quantity) == 13 and int(written.version) == 4
    assert fake_time.caps == [0.01, 0.02] and fake_time.sleeps == [0.005, 0.01]
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 13


def test_modify_gives_up_with_a_clear_conflict_and_writes_nothing_of_its_own(item, fake_time):
    def always_overtaken(stored: dict) -> dict:
        services.item_adjust(sku="TSHIRT-M", delta=1, reason="interloper", actor="cy")
        return {"quantity": 0}

    policy = services.RetryPolicy(attempts=3, sleep=fake_time.sleep, uniform=fake_time.uniform)
    with pytest.raises(InventoryError) as caught:
        services.item_modify(sku="TSHIRT-M", change=always_overtaken, actor="bo", policy=policy)
    assert caught.value.code == "conflict" and "after 3 attempts" in caught.value.detail
    assert fake_time.caps == [0.01, 0.02, 0.04]
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 13  # the interloper's three, none of ours
    assert {c.changed_by for c in selectors.item_history(sku="TSHIRT-M")} == {"ana", "cy"}
    metrics = {m.operation: m for m in selectors.metrics_list()}["modify"]
    assert (int(metrics.exhausted), int(metrics.retries)) == (1, 3)


def test_backoff_cap_stops_growing():
    caps = []
    policy = services.RetryPolicy(base_delay=0.01, max_delay=0.05, sleep=lambda s: None,
                                  uniform=lambda low, high: caps.append(high) or 0)
    for retry in range(5):
        policy.backoff(retry)
    assert caps == [0.01, 0.02, 0.04, 0.05, 0.05]


def test_modify_that_changes_nothing_writes_nothing(item):
    services.item_modify(sku="TSHIRT-M", change=lambda stored: {"quantity": 10}, actor="bo")
    assert int(selectors.item_get(sku="TSHIRT-M").version) == 1


# --- stock import -----------------------------------------------------------------------------------------

def test_import_sets_counts_per_row(item, ddb):
    services.item_create(sku="MUG", name="Mug", quantity=4, actor="ana")
    report = services.stock_import(csv_text="sku,quantity\nTSHIRT-M,7\nMUG,4\n", actor="bo")
    assert [(r.sku, r.outcome, r.before) for r in report] == [("TSHIRT-M", "updated", 10), ("MUG", "unchanged", 4)]
    latest = selectors.item_history(sku="TSHIRT-M")[0]
    assert (latest.kind, latest.reason, latest.after_values["quantity"]) == ("import", "stock count", 7)


def test_import_with_a_bad_line_writes_nothing(item):
    with pytest.raises(InventoryError) as caught:
        services.stock_import(csv_text="TSHIRT-M,7\nMUG,lots\nBADGE,-1\n", actor="bo")
    assert caught.value.code == "invalid"
    assert "line 2" in caught.value.detail and "line 3" in caught.value.detail
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 10


# --- invariants and metrics -------------------------------------------------------------------------------

def test_invariants_hold_after_every_kind_of_change(item):
    edit(quantity=12)
    services.item_adjust(sku="TSHIRT-M", delta=-3, reason="sold", actor="bo")
    services.stock_import(csv_text="TSHIRT-M,20", actor="bo")
    assert_invariants_clean()


def test_invariants_catch_a_write_that_skipped_history(item):
    techniques.naive_add(sku="TSHIRT-M", delta=1, actor="eve")
    problems = broken_invariants()
    assert problems["inventory items match their latest history entry"] == [
        "ITEM#TSHIRT-M: at version 2 but latest change is 1"]
    assert "ITEM#TSHIRT-M: version 2 but history holds 1 entries" in problems[
        "inventory history versions are contiguous"][0]


def test_invariants_catch_negative_stock(item):
    InventoryItem(*InventoryItem.key_for("TSHIRT-M")).update(
        actions=[InventoryItem.quantity.set(-1)], add_version_condition=False)
    problems = broken_invariants()
    assert "ITEM#TSHIRT-M: quantity -1" in problems["inventory quantities are never negative"]


def test_metrics_count_outcomes_and_capacity(item):
    services.item_adjust(sku="TSHIRT-M", delta=-1, reason="sold", actor="bo")
    with pytest.raises(InventoryError):
        services.item_adjust(sku="TSHIRT-M", delta=-100, reason="sold", actor="bo")
    metrics = {m.operation: m for m in selectors.metrics_list()}
    adjust = metrics["adjust"]
    assert (int(adjust.calls), int(adjust.succeeded), int(adjust.refused)) == (2, 1, 1)
    assert int(adjust.condition_failures) == 1
    # Per call: one strongly consistent GetItem and one TransactWriteItems.
    assert int(adjust.requests) == 4
    assert float(adjust.write_capacity) > 0
    assert int(metrics["create"].calls) == 1


def test_history_sort_key_is_zero_padded():
    assert InventoryChange.sk_for(7) == "CHANGE#0000000007"
    assert InventoryChange.sk_for(10) > InventoryChange.sk_for(9)


def test_saving_an_unchanged_form_writes_nothing(item):
    assert int(edit().version) == 1
    assert len(selectors.item_history(sku="TSHIRT-M")) == 1


def test_adjustment_is_one_transaction_with_the_version_check_and_stock_guard(item):
    """The exact request: one TransactWriteItems whose item update carries version check, guard and change."""
    from tems.dynamo import transaction_connection

    sent = []

    def capture(params, **_):
        sent.append(params)

    events = transaction_connection().client.meta.events
    events.register("provide-client-params.dynamodb.TransactWriteItems", capture)
    try:
        services.item_adjust(sku="TSHIRT-M", delta=-2, reason="sold", actor="bo", idempotency_key=KEY)
    finally:
        events.unregister("provide-client-params.dynamodb.TransactWriteItems", capture)
    # The adjustment's transaction; the operation's metrics follow in a one-item transaction of their own.
    request, metrics = sent
    assert [entry["Update"]["Key"]["PK"]["S"] for entry in metrics["TransactItems"]] == ["METRICS#inventory"]
    puts = [entry["Put"] for entry in request["TransactItems"] if "Put" in entry]
    [update] = [entry["Update"] for entry in request["TransactItems"] if "Update" in entry]

    def resolved(expression: str, names: dict, values: dict) -> str:
        for placeholder, name in names.items():
            expression = expression.replace(placeholder, name)
        for placeholder, value in sorted(values.items(), key=lambda kv: -len(kv[0])):
            expression = expression.replace(placeholder, next(iter(value.values())))
        return expression

    names, values = update["ExpressionAttributeNames"], update["ExpressionAttributeValues"]
    assert resolved(update["ConditionExpression"], names, values) == \
        "((attribute_exists (PK) AND quantity >= 2) AND version = 1)"
    assert "ADD quantity -2, version 1" in resolved(update["UpdateExpression"], names, values)
    assert update["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
    assert sorted(put["Item"]["SK"]["S"] for put in puts) == ["CHANGE#0000000002", "RECORD"]
    assert all(put["ConditionExpression"].startswith("(attribute_not_exists") or
               put["ConditionExpression"].startswith("attribute_not_exists") for put in puts)
