"""The export holds everything of the person, found by where the person's items live, as one readable entry per
registration."""

import json

import pytest

from registrations.checkins import services as checkins
from registrations.messages import services as messages
from registrations.models import Registration
from registrations.privacy.selectors import item_from_raw, personal_data_read
from registrations.serializers import personal_data_to_dict
from registrations.ticket_tokens import ticket_token
from tems import accounts
from tems.clock import utcnow
from tems.dynamo import boto3_client, current_config
from tems.identity import user_key
from tems.ratelimit import WriteRateCounter
from tests.registrations.privacy.helpers import (
    full_event_with_waiting,
    past_event_with,
    person,
    register_person,
    seed_registration_answers,
)

pytestmark = pytest.mark.django_db


def personal_data_export(*, user_id: str, account: dict | None = None) -> dict:
    data = personal_data_read(user_id=user_id)
    return personal_data_to_dict(user_id=user_id, items=data.items, mails=data.mails, events=data.events,
                                 account=account, exported_at=utcnow())


def _person_items(key: str, registration_ids: list[str]) -> list[dict]:
    """Every item of the table that names the person's key or one of their registrations, but the transient ones
    the export leaves out on purpose (stored answers of taps, undelivered outbox messages: docs/privacy.md)."""
    found = []
    for page in boto3_client().get_paginator("scan").paginate(TableName=current_config().table_name):
        for item in page["Items"]:
            text = json.dumps(item)
            if item["PK"]["S"].startswith(("IDEMPOTENCY#", "OUTBOX#")):
                continue
            if key in text or any(rid in text for rid in registration_ids):
                found.append(item_from_raw(item))
    return found


def _names(value) -> set[str]:
    """Every field name anywhere in an exported value."""
    if isinstance(value, dict):
        return set(value) | {name for inner in value.values() for name in _names(inner)}
    if isinstance(value, list):
        return {name for inner in value for name in _names(inner)}
    return set()


def test_the_export_is_one_readable_entry_per_registration_with_everything_of_the_person(ddb, staff_user):
    alice, bob = person("alice", "alice@uni.test"), person("bob", "bob@uni.test")
    event, upcoming = full_event_with_waiting(bob, alice)  # alice waits
    past, attended = past_event_with(alice)
    checkins.checkin_create(
        event_id=past.event_id, door="north", staff_id=user_key(staff_user), staff_name="staffer",
        ticket_text=ticket_token(event_id=past.event_id, registration_id=attended["registration_id"],
                                 user_id=user_key(alice)), idempotency_key="scan-1", fingerprint="f")
    key = user_key(alice)
    seed_registration_answers(past.event_id, attended, alice, {"diet": "vegan"})
    # An item kind this module has never heard of, in the person's own partition.
    boto3_client().put_item(TableName=current_config().table_name, Item={
        "PK": {"S": Registration.user_pk_for(key)}, "SK": {"S": "NOTE#x"}, "entity": {"S": "Note"},
        "text": {"S": "remember the badge"}})
    WriteRateCounter(*WriteRateCounter.key_for(key, 29_000_000), n=3, expires_at=utcnow()).save()

    export = personal_data_export(user_id=key, account=accounts.account_data(user=alice))

    assert not _names(export) & {"PK", "SK", "GSI1PK", "GSI1SK", "layout", "shard", "lane", "entity"}
    entries = {entry["registration_id"]: entry for entry in export["registrations"]}
    assert len(entries) == len(export["registrations"]) == 2  # one entry per registration, however many copies
    # Every item naming the person is in the export: merged into its registration's entry, or kept as it is.
    for item in _person_items(key, list(entries)):
        assert item.get("registration_id") in entries or item["SK"].startswith("MINUTE#") or item["SK"] == "NOTE#x"
    assert export["other"] == [{"kind": "Note", "text": "remember the badge"}]
    assert export["write_requests"] == [{"minute": "2025-02-19T21:20:00+00:00", "requests": 3}]
    went = entries[attended["registration_id"]]
    assert went["event"] == {"id": past.event_id, "title": past.title, "starts_at": past.starts_at.isoformat(),
                             "location": past.location, "cancelled_at": None}
    assert went["status"] == "confirmed" and went["answers"] == [{"question": "diet", "answer": "vegan"}]
    assert went["checked_in"]["door"] == "north" and went["checked_in"]["by"] == "staffer"
    assert [(row["action"], row["door"]) for row in went["door_log"]] == [("checked_in", "north")]
    waiting = next(entry for entry in export["registrations"] if entry["event"]["id"] == event.event_id)
    assert waiting["status"] == "waitlisted" and waiting["answers"] == [] and waiting["checked_in"] is None
    assert export["account"]["username"] == "alice" and export["account"]["email"] == "alice@uni.test"
    assert "bob" not in json.dumps(export)  # nobody else's data
    assert upcoming["status"] == "confirmed"


def test_the_export_lists_the_staff_messages_sent_to_the_person(ddb, staff_user):
    alice = person("alice", "alice@uni.test")
    event, _ = full_event_with_waiting(alice, capacity=2)
    messages.message_send_once(event_id=event.event_id, user_id=user_key(staff_user), created_by="staffer",
                               idempotency_key="m-1", fingerprint="f", audience="confirmed",
                               subject="Room change", body="We moved to room 2.")
    late = person("late", "late@uni.test")
    register_person(event.event_id, late)

    mails = personal_data_export(user_id=user_key(alice))["mails"]
    assert [(m["subject"], m["body"]) for m in mails] == [("Room change", "We moved to room 2.")]
    assert personal_data_export(user_id=user_key(late))["mails"] == []
