"""The export holds every item of the person, found by where the person's items live, each item whole."""

import json

import pytest

from registrations.checkins import services as checkins
from registrations.messages import services as messages
from registrations.models import Registration
from registrations.privacy.selectors import personal_data_read
from registrations.serializers import personal_data_to_dict
from registrations.ticket_tokens import ticket_token
from tems import accounts
from tems.clock import utcnow
from tems.dynamo import boto3_client, current_config
from tems.identity import user_key
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


def _person_keys(key: str, registration_ids: list[str]) -> set[tuple[str, str]]:
    """Every item of the table that names the person's key or one of their registrations, but the transient ones
    the export leaves out on purpose (stored answers of taps, undelivered outbox messages: docs/privacy.md)."""
    found = set()
    for page in boto3_client().get_paginator("scan").paginate(TableName=current_config().table_name):
        for item in page["Items"]:
            text = json.dumps(item)
            if item["PK"]["S"].startswith(("IDEMPOTENCY#", "OUTBOX#")):
                continue
            if key in text or any(rid in text for rid in registration_ids):
                found.add((item["PK"]["S"], item["SK"]["S"]))
    return found


def _exported_keys(export: dict) -> set[tuple[str, str]]:
    return {(item["PK"], item["SK"]) for items in export["items"].values() for item in items}


def test_the_export_holds_every_item_of_the_person_answers_and_unknown_kinds_included(ddb, staff_user):
    alice, bob = person("alice", "alice@uni.test"), person("bob", "bob@uni.test")
    event, upcoming = full_event_with_waiting(bob, alice)  # alice waits
    past, attended = past_event_with(alice)
    checkins.checkin_create(
        event_id=past.event_id, door="north", staff_id=user_key(staff_user), staff_name="staffer",
        ticket_text=ticket_token(event_id=past.event_id, registration_id=attended["registration_id"],
                                 user_id=user_key(alice)), idempotency_key="scan-1", fingerprint="f")
    key = user_key(alice)
    seed_registration_answers(past.event_id, attended, alice, {"diet": "vegan"})
    # An item kind this module has never heard of, in the person's own partition (an offer, say).
    boto3_client().put_item(TableName=current_config().table_name, Item={
        "PK": {"S": Registration.user_pk_for(key)}, "SK": {"S": "OFFER#x"}, "entity": {"S": "Offer"},
        "answers": {"M": {"note": {"S": "offered"}}}})

    export = personal_data_export(user_id=key, account=accounts.account_data(user=alice))

    registration_ids = [attended["registration_id"]] + [r["registration_id"] for r in export["items"]["Registration"]]
    assert _person_keys(key, registration_ids) <= _exported_keys(export)
    kinds = set(export["items"])
    assert {"Registration", "RegistrationClaim", "WaitlistEntry", "CheckIn", "CheckInLogEntry"} <= kinds
    vegan = [item for items in export["items"].values() for item in items if item.get("answers")]
    assert {json.dumps(item["answers"]) for item in vegan} >= {'{"diet": "vegan"}', '{"note": "offered"}'}
    assert export["account"]["username"] == "alice" and export["account"]["email"] == "alice@uni.test"
    assert {e["event_id"] for e in export["events"]} == {event.event_id, past.event_id}
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
