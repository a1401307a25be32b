"""The single table's base model: every model inherits its Meta, keys and entity marker, and the items they
write are the same as when each model declared them itself."""

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import inventory.models  # noqa: F401 - registers the models
import registrations.models
import registrations.privacy.models  # noqa: F401
import tems.outbox
import tems.ratelimit  # noqa: F401
from registrations.events.models import Event, EventSeats
from registrations.models import Registration
from tems.dynamo import TableMeta, TableModel, table_models
from tems.idempotency import IdempotencyRecord

# The attribute names each model writes (DynamoDB names), as they were before the base model existed, plus the
# ones added since on purpose: EventSeats.starts_at (registration closes at the start), Registration.GSI1PK/SK
# (the attendee index), and the waiting list's lanes: the lane and gate attributes on a seat shard, ``lane`` on an
# entry and its registration's items; the waiting list's queue item, where the lanes claim their blocks of
# tickets; the privacy features' erasure and answer retention items;
# ``cancelled_at`` on the event, its views and its seat shards (the event's cancellation, which every write that
# admits someone checks).
# Waitlist offers: the event's ``offer_hours``, an offered registration's ``offer_ends_at``, the Offer item.
# Minus the event's ``registered_count`` and ``waitlist_count``: seats are counted on their shards and lanes
# (``seat_counts``), and the door's view reads ``capacity`` instead.
# The cancellation's reason on the event; a person's copy of each message addressed to them (MessageCopy).
# The audit log's entries (tems.audit).
ITEM_SHAPES = {
    "AuditEntry": {
        "GSI1PK", "GSI1SK", "PK", "SK", "action", "actor", "after", "at", "before", "entity", "entry_id", "event_id",
        "expires_at", "idempotency_key", "request_id", "role", "sku", "subject", "team",
    },
    "CheckIn": {
        "PK", "SK", "checked_in_at", "checked_in_by", "door", "entity", "event_id", "registration_id", "scan_key",
        "user_id"
    },
    "CheckInLogEntry": {"PK", "SK", "action", "at", "by", "door", "entity", "event_id", "registration_id"},
    "Event": {
        "GSI1PK", "GSI1SK", "PK", "SK", "capacity", "checked_in_count", "created_at", "created_by", "description",
        "entity", "event_id", "expires_at", "location", "seat_shards", "sliced", "starts_at",
        "title", "updated_at", "updated_by", "version", "reminder_hours", "cancelled_at",
        "cancelled_by", "offer_hours", "ends_at", "time_zone", "map_url", "online_url", "category", "organizer",
        "public", "registration_opens_at", "registration_closes_at", "cancel_reason", "team",
        "state", "published_at", "published_by", "sent_back_note", "sent_back_by",
    },
    "EventFacet": {
        "GSI1PK", "GSI1SK", "PK", "SK", "entity", "event_id", "facet", "starts_at", "category", "organizer", "public",
        "online", "in_person", "words",
    },
    "Erasure": {"GSI1PK", "GSI1SK", "PK", "SK", "account_id", "done_at", "entity", "requested_at", "user_id"},
    "EventCheckins": {"PK", "SK", "capacity", "checked_in_count", "seat_shards", "cancelled_at"},
    "EventRetention": {
        "GSI1PK", "GSI1SK", "PK", "SK", "days", "done_at", "due_at", "entity", "event_id", "last_key", "partition",
        "updated_at", "updated_by", "version"
    },
    "EventSeats": {
        "PK", "SK", "capacity", "seat_shards", "sliced", "starts_at",
        "cancelled_at", "offer_hours"
    },
    "IdempotencyRecord": {
        "PK", "SK", "attempt_id", "created_at", "entity", "expires_at", "fingerprint", "key", "lease_expires_at",
        "response_body", "response_content_type", "response_headers", "response_status", "status", "user_id"
    },
    "InventoryChange": {
        "PK", "SK", "after", "before", "changed_at", "changed_by", "delta", "entity", "kind", "reason", "sku", "version"
    },
    "InventoryItem": {
        "GSI1PK", "GSI1SK", "PK", "SK", "created_at", "created_by", "description", "entity", "location", "name",
        "quantity", "sku", "team", "updated_at", "updated_by", "version"
    },
    "Offer": {
        "GSI1PK", "GSI1SK", "PK", "SK", "entity", "registration_id", "event_id", "user_id", "state", "shard",
        "offered_at", "ends_at", "ended_at", "expires_at"
    },
    "MessageCopy": {"PK", "SK", "created_at", "entity", "event_id", "message_id", "registration_id", "user_id"},
    "OperationMetrics": {
        "PK", "SK", "calls", "condition_failures", "entity", "exhausted", "operation", "read_capacity", "refused",
        "replays", "requests", "retries", "succeeded", "transaction_conflicts", "updated_at", "write_capacity"
    },
    "OutboxMessage": {
        "GSI1PK", "GSI1SK", "PK", "SK", "attempts", "claimed_by", "created_at", "entity", "lease_until", "message_id",
        "message_type", "payload", "request_id"
    },
    "Registration": {
        "GSI1PK", "GSI1SK", "PK", "SK", "created_at", "entity", "event_id", "promoted_at", "registration_id",
        "shard", "status", "ticket", "user_id", "user_name", "lane", "offer_ends_at", "answers"
    },
    "RegistrationClaim": {
        "PK", "SK", "created_at", "entity", "event_id", "registration_id", "shard", "status", "ticket", "user_id",
        "user_name", "lane"
    },
    "SeatShard": {
        "PK", "SK", "capacity", "entity", "event_id", "shard", "shards", "starts_at", "taken", "gate",
        "opened", "lane_next", "lane_end", "lane_at", "lane_left", "lane_size", "waiting", "cancelled_at", "questions",
        "opens_at", "closes_at", "held", "draft",
    },
    "SeatGate": {"PK", "SK", "entity", "event_id", "state", "epoch", "opened", "shards"},
    "WaitlistEntry": {"PK", "SK", "entity", "event_id", "registration_id", "ticket", "user_id", "lane", "user_name",
                      "status", "created_at", "GSI1PK", "GSI1SK", "answers"},
    "WaitlistQueue": {
        "PK", "SK", "entity", "event_id", "seq", "left", "claim_last", "claim_size", "claim_from", "claim_at"
    },
    "WriteRateCounter": {"PK", "SK", "entity", "expires_at", "n"},
}


def by_name():
    return {model.__name__: model for model in table_models()}


@pytest.mark.parametrize("name", sorted(ITEM_SHAPES))
def test_each_model_writes_the_same_attribute_names(name):
    model = by_name()[name]
    assert issubclass(model, TableModel) and issubclass(model.Meta, TableMeta)
    assert {attribute.attr_name for attribute in model.get_attributes().values()} == ITEM_SHAPES[name]
    assert (model._hash_keyname, model._range_keyname) == ("pk", "sk")
    assert (model.get_attributes()["pk"].attr_name, model.get_attributes()["sk"].attr_name) == ("PK", "SK")


def test_the_apps_load_every_table_model_at_start_up():
    # A fresh interpreter that only starts Django, as the server and the relay do, finds the same models as one
    # that then imports every module of the apps: the feature packages' models modules are loaded by the apps,
    # not by whatever a caller happened to import first.
    script = """
import importlib, pkgutil
import django
django.setup()
from tems.dynamo import table_models
names = lambda: sorted(model.__name__ for model in table_models())
print(" ".join(names()))
import inventory, lab, registrations, tems
for package in (registrations, inventory, lab, tems):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
print(" ".join(names()))
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tems.settings", "DJANGO_DEBUG": "1"}
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True,
                           cwd=Path(__file__).resolve().parents[2])
    at_start_up, everything = found.stdout.splitlines()
    assert at_start_up.split() == everything.split()
    assert set(ITEM_SHAPES) <= set(at_start_up.split())


def test_the_base_is_not_a_table_model_of_its_own():
    assert TableModel not in table_models()


def test_entity_is_the_class_name_and_a_view_writes_none():
    event = Event(*Event.key_for("e1"), event_id="e1")
    assert event.serialize(null_check=False)["entity"] == {"S": "Event"}
    registration = Registration(*Registration.user_key_for("u1", "r1"))
    assert registration.serialize(null_check=False)["entity"] == {"S": "Registration"}
    assert "entity" not in EventSeats(*EventSeats.key_for("e1"), capacity=3).serialize(null_check=False)


def test_a_fixed_sort_key_is_kept_by_the_model_that_redeclares_it():
    record = IdempotencyRecord(IdempotencyRecord.pk_for("u1", "k1"))
    assert record.serialize(null_check=False)["SK"] == {"S": IdempotencyRecord.SK}


# --- PynamoDB's own steps, through the base model ----------------------------------------------------------

def test_an_unknown_attribute_is_refused_as_pynamodb_refuses_it():
    with pytest.raises(ValueError, match="Attribute colour specified does not exist"):
        Registration(*Registration.user_key_for("u1", "r1"), colour="red")


def test_a_callable_default_is_called_for_each_new_model():
    before = datetime.now(UTC)
    event = Event(*Event.key_for("e1"), event_id="e1")
    assert before <= event.created_at <= datetime.now(UTC)
    assert Event(*Event.key_for("e2"), event_id="e2").created_at >= event.created_at


def test_version_and_ttl_attributes_keep_their_conversions():
    # Their descriptors convert on the way in (int, a UTC datetime).
    event = Event(*Event.key_for("e1"), event_id="e1", version=2.0, expires_at=timedelta(hours=1))
    assert type(event.attribute_values["version"]) is int
    assert event.attribute_values["expires_at"].tzinfo is not None
