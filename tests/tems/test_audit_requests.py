"""What the audit log costs in DynamoDB requests, on DynamoDB Local: a staff change's entry rides in the change's
own transaction (the same requests as without it), a read of attendees adds one PutItem, and a student's
register / replay / already-registered stays 1 / 1 / 2 (tests/tems/test_ratelimit_transaction.py)."""

from __future__ import annotations

import json
import uuid
from functools import partial

import pytest
from django.contrib.auth.models import User
from django.test import Client

import tems.audit
from inventory import services as inventory_services
from tems.models import Membership, Team
from tems.roles import EVENT_MANAGER, INVENTORY_KEEPER
from tests.registrations.helpers import make_event, register

STARTS = "2027-05-01T09:00:00+00:00"


@pytest.fixture
def manager(db):
    team = Team.objects.create(id="chem", name="Chemistry Society")
    user = User.objects.create_user("mia", password="pw")
    Membership.objects.create(user=user, team=team, role=EVENT_MANAGER)
    keeper = User.objects.create_user("kim", password="pw")
    Membership.objects.create(user=keeper, team=team, role=INVENTORY_KEEPER)
    clients = {}
    for name, person in (("manager", user), ("keeper", keeper)):
        clients[name] = Client()
        clients[name].force_login(person)
    return clients


def send(client, method: str, url: str, body: dict | None = None, **headers):
    headers.setdefault("HTTP_IDEMPOTENCY_KEY", str(uuid.uuid4()))
    return getattr(client, method)(url, data=json.dumps(body or {}), content_type="application/json", **headers)


CHANGES = ["create", "edit", "cancel", "message", "check_in", "undo", "adjust", "attendees"]


def run(change: str, clients, calls: list[str]) -> list[str]:
    """Prepare ``change`` on a new event, then make it alone and return what it sent to DynamoDB."""
    manager, keeper = clients["manager"], clients["keeper"]
    event = make_event(capacity=3, team="chem")
    url = f"/api/events/{event.event_id}"
    if change == "create":
        action = partial(send, manager, "post", "/api/events",
                         {"title": "T", "starts_at": STARTS, "capacity": 4, "team": "chem"})
    elif change == "edit":
        action = partial(send, manager, "put", url, {"title": "T", "starts_at": STARTS, "capacity": 5},
                         HTTP_IF_MATCH='"1"')
    elif change == "cancel":
        action = partial(send, manager, "post", f"{url}/cancel")
    elif change == "message":
        action = partial(send, manager, "post", f"{url}/messages",
                         {"audience": "confirmed", "subject": "Hi", "body": "Hello"})
    elif change in ("check_in", "undo"):
        registered = register(event.event_id, "ann-key", user_name="ann").data
        assert send(manager, "post", f"{url}/checkins", {"ticket": registered["ticket_url"]}).status_code == 201
        if change == "check_in":
            other = register(event.event_id, "bob-key", user_name="bob").data
            action = partial(send, manager, "post", f"{url}/checkins", {"ticket": other["ticket_url"]})
        else:
            action = partial(send, manager, "delete", f"{url}/checkins/{registered['registration_id']}")
    elif change == "adjust":
        sku = inventory_services.item_create(sku=f"INK-{uuid.uuid4().hex[:6]}", name="Ink", quantity=5,
                                             actor="seed", team="chem").sku
        action = partial(send, keeper, "post", f"/api/inventory/{sku}/adjustments", {"delta": -1, "reason": "sold"})
    else:
        action = partial(manager.get, f"{url}/attendees")
    calls.clear()
    answer = action()
    assert answer.status_code < 300, answer.content
    return list(calls)


@pytest.mark.parametrize("change", CHANGES)
def test_a_staff_change_costs_the_same_requests_with_its_audit_entry(ddb, manager, dynamodb_calls, monkeypatch,
                                                                      change, capsys):
    with_entry = run(change, manager, dynamodb_calls)
    monkeypatch.setattr(tems.audit, "add_entry", lambda transaction, **_: None)
    monkeypatch.setattr(tems.audit, "record_read", lambda **_: None)
    without = run(change, manager, dynamodb_calls)
    with capsys.disabled():
        print(f"\n{change}: without the log {without}, with it {with_entry}")
    if change == "attendees":
        assert with_entry == [*without, "PutItem"]
    else:
        assert with_entry == without
