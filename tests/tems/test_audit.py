"""The audit log's promise on DynamoDB Local: each staff change writes exactly one entry, inside its own
transaction; a replayed tap and a refused change write none. Each is also run against a broken variant (the entry
written beside the transaction, on every request) that the same counts catch."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.test import Client

import tems.audit
from inventory import services as inventory_services
from inventory.services import stock_counts
from registrations.events import services as event_services
from tems.audit import Actor
from tems.audit.models import AuditEntry
from tems.audit.services import new_entry
from tems.identity import user_key
from tems.models import Membership, Team
from tems.roles import EVENT_MANAGER
from tests.registrations.helpers import make_event, register

STARTS = "2027-05-01T09:00:00+00:00"


def entries(*, event_id: str | None = None, sku: str | None = None) -> list[AuditEntry]:
    pk = AuditEntry.pk_for_event(event_id) if event_id else AuditEntry.pk_for_item(sku)
    return list(AuditEntry.query(pk, consistent_read=True))


def post_json(client, url: str, body: dict, key: str | None = None, method: str = "post", **headers):
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return getattr(client, method)(url, data=json.dumps(body), content_type="application/json", **headers)


def written_beside_the_transaction(monkeypatch) -> None:
    """Deliberately broken: the entry is put on its own, before the change's transaction and whatever its fate,
    on every request that reaches the service (a replay too)."""
    def beside(transaction, *, actor, label=None, **fields):
        if actor is not None:
            new_entry(actor=actor, **fields).save()

    monkeypatch.setattr(tems.audit, "add_entry", beside)


# --- one tap, replayed: one entry ----------------------------------------------------------------------------

def create_event(client):
    key = str(uuid.uuid4())
    body = {"title": "Robot night", "starts_at": STARTS, "capacity": 40}
    first = post_json(client, "/api/events", body, key)
    assert first.status_code == 201, first.content
    replay = post_json(client, "/api/events", body, key)
    assert replay.content == first.content and replay["Idempotent-Replayed"] == "true"
    # A replay's transaction names a new event id: the whole table is counted (a table per test).
    return list(AuditEntry.scan(AuditEntry.pk.startswith(AuditEntry.pk_for_event("")), consistent_read=True))


def cancel_event(client):
    event = make_event(capacity=3)
    key = str(uuid.uuid4())
    for _ in range(2):
        assert post_json(client, f"/api/events/{event.event_id}/cancel", {}, key).status_code == 200
    # Another key on a cancelled event answers the same and changes nothing: no entry either.
    assert post_json(client, f"/api/events/{event.event_id}/cancel", {}, str(uuid.uuid4())).status_code == 200
    return entries(event_id=event.event_id)


def send_message(client):
    event = make_event(capacity=3)
    key = str(uuid.uuid4())
    body = {"audience": "confirmed", "subject": "Bring a pen", "body": "See you there."}
    for _ in range(2):
        assert post_json(client, f"/api/events/{event.event_id}/messages", body, key).status_code == 202
    return entries(event_id=event.event_id)


def check_in(client):
    event = make_event(capacity=3)
    ticket = register(event.event_id, "ann-key", user_name="ann").data["ticket_url"]
    key = str(uuid.uuid4())
    for _ in range(2):
        answer = post_json(client, f"/api/events/{event.event_id}/checkins", {"ticket": ticket, "door": "B"}, key)
        assert answer.status_code == 201
    # A second scan of the ticket under another key: "already checked in", nothing changed, no entry.
    again = post_json(client, f"/api/events/{event.event_id}/checkins", {"ticket": ticket}, str(uuid.uuid4()))
    assert again.status_code == 200
    return entries(event_id=event.event_id)


def adjust_stock(client):
    inventory_services.item_create(sku="PEN-1", name="Pens", quantity=10, actor="seed")
    key = str(uuid.uuid4())
    for _ in range(2):
        answer = post_json(client, "/api/inventory/PEN-1/adjustments", {"delta": -2, "reason": "sold"}, key)
        assert answer.status_code == 200, answer.content
    return entries(sku="PEN-1")


def publish_draft(client):
    event = event_services.event_create(title="Go club night", starts_at=datetime(2027, 5, 1, 9, tzinfo=UTC),
                                        capacity=20, created_by="soc", team="go-soc", draft=True)
    key = str(uuid.uuid4())
    for _ in range(2):
        answer = post_json(client, f"/api/drafts/{event.event_id}/publish", {}, key)
        assert answer.status_code == 200, answer.content
    # Published already: a second tap under another key is refused and changes nothing, so it writes no entry.
    again = post_json(client, f"/api/drafts/{event.event_id}/publish", {}, str(uuid.uuid4()))
    assert again.status_code == 409
    return entries(event_id=event.event_id)


TAPS = [create_event, cancel_event, send_message, check_in, adjust_stock, publish_draft]


@pytest.mark.parametrize("tap", TAPS, ids=lambda tap: tap.__name__)
def test_a_tap_and_its_replays_write_exactly_one_entry(ddb, staff_client, staff_user, tap):
    found = tap(staff_client)
    assert len(found) == 1
    (entry,) = found
    assert entry.actor == user_key(staff_user) and entry.role == "platform_admin"
    assert entry.idempotency_key and entry.request_id
    assert entry.expires_at > entry.at


@pytest.mark.parametrize("tap", TAPS, ids=lambda tap: tap.__name__)
def test_broken_variant_an_entry_beside_the_transaction_is_written_again_by_the_replay(ddb, staff_client,
                                                                                        monkeypatch, tap):
    written_beside_the_transaction(monkeypatch)
    assert len(tap(staff_client)) >= 2  # what the test above would refuse


# --- a refused change: no entry ------------------------------------------------------------------------------

def stale_edit(client) -> str:
    event = make_event(capacity=40, title="Robot night")
    body = {"title": "Robot night", "starts_at": STARTS, "capacity": 60}
    answer = post_json(client, f"/api/events/{event.event_id}", body, method="put", HTTP_IF_MATCH='"7"')
    assert answer.status_code == 412
    return event.event_id


def test_a_refused_edit_writes_no_entry(ddb, staff_client):
    assert entries(event_id=stale_edit(staff_client)) == []


def test_broken_variant_an_entry_beside_a_refused_edit_is_written_all_the_same(ddb, staff_client, monkeypatch):
    written_beside_the_transaction(monkeypatch)
    assert len(entries(event_id=stale_edit(staff_client))) == 1


def test_an_edit_records_the_fields_it_changed_before_and_after(ddb, staff_client):
    event = make_event(capacity=40, title="Robot night", starts_at=datetime(2027, 5, 1, 9, tzinfo=UTC))
    body = {"title": "Robot night", "starts_at": STARTS, "capacity": 60}
    answer = post_json(staff_client, f"/api/events/{event.event_id}", body, method="put", HTTP_IF_MATCH='"1"')
    assert answer.status_code == 200, answer.content
    (entry,) = entries(event_id=event.event_id)
    assert (entry.action, entry.before, entry.after) == ("event_edited", {"capacity": 40}, {"capacity": 60})


# --- role and team as they were ------------------------------------------------------------------------------

def test_an_event_manager_is_recorded_with_their_role_and_team(ddb, db):
    team = Team.objects.create(id="chem", name="Chemistry Society", audit_retention_days=90)
    manager = User.objects.create_user("mia", password="pw")
    Membership.objects.create(user=manager, team=team, role=EVENT_MANAGER)
    client = Client()
    client.force_login(manager)
    event = make_event(capacity=3, team="chem")
    assert post_json(client, f"/api/events/{event.event_id}/cancel", {}, str(uuid.uuid4())).status_code == 200
    (entry,) = entries(event_id=event.event_id)
    assert (entry.actor, entry.role, entry.team) == (user_key(manager), EVENT_MANAGER, "chem")
    assert round((entry.expires_at - entry.at).total_seconds() / 86400) == 90
    # The team's log is one Query of the index.
    assert [found.entry_id for found in AuditEntry.by_team.query(AuditEntry.team_pk_for("chem"))] == [entry.entry_id]


def test_a_change_nobody_made_by_hand_writes_no_entry(ddb):
    event = make_event(capacity=3)  # the demo's seeding, the lab: no actor
    assert entries(event_id=event.event_id) == []


def test_questions_and_the_answers_retention_write_one_entry_each_and_a_refused_one_none(ddb, staff_client):
    event = make_event(capacity=3)
    questions = {"version": 0, "questions": [{"label": "Diet", "kind": "text"}]}
    url = f"/api/events/{event.event_id}/questions"
    assert post_json(staff_client, url, questions, method="put").status_code == 200
    # The same version again: someone saved in between, refused, no entry.
    assert post_json(staff_client, url, questions, method="put").status_code == 409
    url = f"/api/events/{event.event_id}/retention"
    assert post_json(staff_client, url, {"days": 7}, method="put").status_code == 200
    assert post_json(staff_client, url, {"days": 8}, method="put").status_code == 409
    found = sorted((entry.action, entry.after) for entry in entries(event_id=event.event_id))
    assert found == [("answers_retention_changed", {"days": 7}), ("questions_changed", {"questions": 1, "version": 1})]


def test_a_doubled_edit_post_logs_the_change_once(ddb, staff_client):
    event = make_event(capacity=40, title="Robot night", starts_at=datetime(2027, 5, 1, 9, tzinfo=UTC))
    opened = staff_client.get(f"/events/{event.event_id}/edit/").context["form"].initial
    form = {name: "" if value is None else value for name, value in opened.items()}
    form.update(capacity=60, starts_at="2027-05-01T10:00", public="")
    for _ in range(2):  # a double click: the second post meets the first one's save, merged onto itself
        assert staff_client.post(f"/events/{event.event_id}/edit/", form).status_code == 302
    assert [entry.after for entry in entries(event_id=event.event_id)] == [{"capacity": 60}]


# --- a stock count: one entry per counted item, in the transaction that writes it ----------------------------

def actor_of_user(user) -> Actor:
    return Actor(user_id=user_key(user), roles={}, platform_admin=True)


def import_with_a_sale_in_between(monkeypatch, actor) -> None:
    """40 counted items (two transactions); a sale lands on one of them between the check and its transaction, so
    that transaction is refused whole and its rows are written one by one."""
    for n in range(40):
        inventory_services.item_create(sku=f"CUP-{n:02d}", name="Cup", quantity=500, actor="seed")
    original = stock_counts._import_chunk

    def someone_sells_first(chunk, stored, **kwargs):
        if any(sku == "CUP-35" for _, sku, _ in chunk):
            inventory_services.item_adjust(sku="CUP-35", delta=-1, reason="sold", actor="cy")
        return original(chunk, stored, **kwargs)

    monkeypatch.setattr(stock_counts, "_import_chunk", someone_sells_first)
    csv_text = "".join(f"CUP-{n:02d},{n}\n" for n in range(40))
    report = inventory_services.stock_import(csv_text=csv_text, actor="bo", audit_actor=actor)
    assert {row.outcome for row in report} == {"updated"}


def test_a_stock_count_writes_one_entry_per_counted_item_even_when_a_transaction_is_retried_row_by_row(
        ddb, staff_user, monkeypatch):
    import_with_a_sale_in_between(monkeypatch, actor_of_user(staff_user))
    for n in range(40):
        (entry,) = entries(sku=f"CUP-{n:02d}")
        assert entry.action == "item_counted" and entry.after == {"quantity": n}
    assert entries(sku="CUP-35")[0].before == {"quantity": 499}  # counted after the sale, as written


def test_broken_variant_entries_beside_a_refused_stock_count_transaction_are_written_twice(ddb, staff_user,
                                                                                          monkeypatch):
    written_beside_the_transaction(monkeypatch)
    import_with_a_sale_in_between(monkeypatch, actor_of_user(staff_user))
    assert len(entries(sku="CUP-35")) >= 2  # what the test above refuses
