"""A hypothesis state machine of edits, adjustments, replays and imports against a plain Python model.

Single-threaded on DynamoDB Local (every change is a transaction). After every step the stored item must
equal the model and the inventory invariants must hold on the item's partition.
"""

from __future__ import annotations

import uuid

import pytest
from boto3.dynamodb.types import TypeDeserializer
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from inventory import selectors, services
from inventory.errors import InventoryError
from inventory.models import InventoryItem
from tems.dynamo import boto3_client, current_config
from tems.errors import DomainError
from tems.invariants import Item, check_items

NAMES = st.sampled_from(["T-shirt", "Tee", "Lanyard", "Kit"])
LOCATIONS = st.sampled_from(["", "Store A", "Cage 4"])
QUANTITIES = st.integers(min_value=0, max_value=30)
DELTAS = st.integers(min_value=-12, max_value=12).filter(bool)
CHECKS = ("inventory quantities are never negative", "inventory history versions are contiguous",
          "inventory items match their latest history entry")


def partition_items(client, sku: str) -> list[Item]:
    deserializer = TypeDeserializer()
    pages = client.get_paginator("query").paginate(
        TableName=current_config().table_name, ConsistentRead=True, KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": InventoryItem.pk_for(sku)}})
    return [{k: deserializer.deserialize(v) for k, v in raw.items()} for page in pages for raw in page["Items"]]


class InventoryMachine(RuleBasedStateMachine):
    @initialize(quantity=QUANTITIES)
    def create(self, quantity: int) -> None:
        self.sku = f"SM-{uuid.uuid4().hex[:10]}"
        self.client = boto3_client()  # one per run: a new client costs more than the query it would send
        self.fields = {"name": "Kit", "description": "", "quantity": quantity, "location": ""}
        self.version = 1
        self.taps: dict[str, tuple[int, str, tuple[int, int]]] = {}  # key -> (delta, reason, answer)
        services.item_create(sku=self.sku, actor="setup", **self.fields)

    @rule(delta=DELTAS, reason=st.sampled_from(["sold", "received", ""]))
    def adjust(self, delta: int, reason: str) -> None:
        key = str(uuid.uuid4())
        if self.fields["quantity"] + delta < 0:
            with pytest.raises(InventoryError) as refused:
                services.item_adjust(sku=self.sku, delta=delta, reason=reason, actor="bo", idempotency_key=key)
            assert refused.value.code == "conflict" and refused.value.extra["on_hand"] == self.fields["quantity"]
            return
        result = services.item_adjust(sku=self.sku, delta=delta, reason=reason, actor="bo", idempotency_key=key)
        self.fields["quantity"] += delta
        self.version += 1
        assert (result.quantity, result.version, result.replayed) == (self.fields["quantity"], self.version, False)
        self.taps[key] = (delta, reason, (result.quantity, result.version))

    @precondition(lambda self: self.taps)
    @rule(data=st.data())
    def replay_a_tap(self, data) -> None:
        key = data.draw(st.sampled_from(sorted(self.taps)))
        delta, reason, answer = self.taps[key]
        result = services.item_adjust(sku=self.sku, delta=delta, reason=reason, actor="bo", idempotency_key=key)
        assert result.replayed and (result.quantity, result.version) == answer

    @precondition(lambda self: self.taps)
    @rule(data=st.data())
    def reuse_a_key_for_another_request(self, data) -> None:
        key = data.draw(st.sampled_from(sorted(self.taps)))
        delta, reason, _ = self.taps[key]
        with pytest.raises(DomainError) as caught:
            services.item_adjust(sku=self.sku, delta=delta + 100, reason=reason, actor="bo", idempotency_key=key)
        assert caught.value.status == 422

    @rule(name=NAMES, location=LOCATIONS, quantity=QUANTITIES, staleness=st.integers(min_value=0, max_value=2))
    def edit(self, name: str, location: str, quantity: int, staleness: int) -> None:
        expected = self.version - staleness
        wanted = {"name": name, "description": self.fields["description"], "quantity": quantity,
                  "location": location}
        if staleness and expected >= 1:
            with pytest.raises(InventoryError) as caught:
                services.item_update(sku=self.sku, expected_version=expected, actor="cy", **wanted)
            assert caught.value.code == "precondition_failed"
            assert caught.value.extra["current"]["version"] == self.version
            assert [c["version"] for c in caught.value.extra["changes"]] == list(range(self.version, expected, -1))
            return
        if staleness:
            return  # no such older version to be stale at
        item = services.item_update(sku=self.sku, expected_version=expected, actor="cy", **wanted)
        if wanted != self.fields:  # saving unchanged values is no change: no version, no history
            self.fields.update(wanted)
            self.version += 1
        assert int(item.version) == self.version

    @rule(add=st.integers(min_value=-5, max_value=5))
    def read_modify_write(self, add: int) -> None:
        target = self.fields["quantity"] + add
        if target < 0:
            with pytest.raises(InventoryError) as caught:
                services.item_modify(sku=self.sku, change=lambda s: {"quantity": s["quantity"] + add}, actor="dee")
            assert caught.value.code == "invalid"
            return
        services.item_modify(sku=self.sku, change=lambda s: {"quantity": s["quantity"] + add}, actor="dee")
        if add:
            self.fields["quantity"] = target
            self.version += 1

    @rule(counted=QUANTITIES)
    def import_count(self, counted: int) -> None:
        [row] = services.stock_import(csv_text=f"{self.sku},{counted}", actor="eve")
        assert row.outcome == ("unchanged" if counted == self.fields["quantity"] else "updated")
        if row.outcome == "updated":
            self.fields["quantity"] = counted
            self.version += 1

    @invariant()
    def stored_item_matches_the_model(self) -> None:
        stored = selectors.item_get(sku=self.sku)
        assert stored.snapshot() == self.fields and int(stored.version) == self.version

    @invariant()
    def inventory_invariants_hold(self) -> None:
        report = check_items(partition_items(self.client, self.sku), names=CHECKS)
        problems = [problem for found in report.results.values() for problem in found]
        assert problems == []


def test_edits_and_adjustments_keep_every_invariant(ddb):
    run_state_machine_as_test(InventoryMachine, settings=settings(
        max_examples=40, stateful_step_count=15, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]))
