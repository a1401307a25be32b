"""Answers erased after the event's retention: by the relay's periodic job, a page at a time, only for the events
whose time has come, resumable, and staff's setting versioned."""

from datetime import timedelta

import pytest

from registrations import selectors
from registrations.errors import RegistrationError
from registrations.events.services import event_update
from registrations.models import Registration, RegistrationClaim
from registrations.privacy import services as privacy
from registrations.privacy.selectors import retention_get
from tems.dynamo import boto3_client, current_config
from tems.identity import user_key
from tests.helpers import assert_invariants_clean
from tests.registrations.helpers import STARTS, make_event
from tests.registrations.privacy.helpers import (
    ERASED_AT,
    past_event_with,
    person,
    register_person,
    seed_answers,
    seed_registration_answers,
)

pytestmark = pytest.mark.django_db


def _answers_left() -> int:
    pages = boto3_client().get_paginator("scan").paginate(TableName=current_config().table_name,
                                                           FilterExpression="attribute_exists(answers)")
    return sum(len(page["Items"]) for page in pages)


def _answered_event(names: list[str], *, capacity: int):
    event = make_event(capacity=capacity)
    for name in names:
        user = person(name, f"{name}@uni.test")
        registration = register_person(event.event_id, user).data
        if registration["status"] == "confirmed":
            seed_registration_answers(event.event_id, registration, user, {"diet": f"{name}'s diet"})
    return event


def test_answers_go_once_the_retention_has_run_out_and_not_before(ddb):
    kept = _answered_event(["ann"], capacity=2)
    event = _answered_event(["bob", "cat"], capacity=2)
    privacy.retention_set(event_id=event.event_id, days=30, expected_version=None, updated_by="staffer")
    assert _answers_left() == 9

    assert privacy.answers_retention_sweep(now=STARTS + timedelta(days=29)) == 0
    assert _answers_left() == 9
    assert privacy.answers_retention_sweep(now=STARTS + timedelta(days=30)) == 1

    assert _answers_left() == 3  # ann's, of the event without a retention
    retention = retention_get(event_id=event.event_id)
    assert retention.done_at is not None and retention.gsi1pk is None
    assert retention_get(event_id=kept.event_id) is None
    assert_invariants_clean()


def test_a_large_event_is_erased_over_several_runs(ddb, monkeypatch):
    monkeypatch.setattr(privacy, "RETENTION_PAGE_ITEMS", 2)
    monkeypatch.setattr(privacy, "RETENTION_PAGES_PER_RUN", 3)
    event = _answered_event([f"s{n}" for n in range(7)], capacity=7)
    for n in range(9):  # a waiting list: nine entries in one lane's partition, more than a run reads
        register_person(event.event_id, person(f"w{n}", f"w{n}@uni.test"))
    for entry in selectors.waitlist_entries(event_id=event.event_id):
        seed_answers(entry.pk, entry.sk, {"diet": "waiting"})
    assert _answers_left() == 7 * 3 + 9
    privacy.retention_set(event_id=event.event_id, days=0, expected_version=None, updated_by="staffer")
    runs = 0
    while privacy.answers_retention_sweep(now=STARTS + timedelta(days=1)) == 0:
        runs += 1
        assert runs < 40
    assert runs >= 1 and _answers_left() == 0
    assert privacy.answers_retention_sweep(now=STARTS + timedelta(days=2)) == 0  # nothing due any more


def test_a_moved_event_keeps_its_answers_until_its_new_date(ddb):
    event = _answered_event(["bob"], capacity=2)
    privacy.retention_set(event_id=event.event_id, days=1, expected_version=None, updated_by="staffer")
    event_update(event_id=event.event_id, expected_version=1, title="Open day", description="", location="",
                 starts_at=STARTS + timedelta(days=10), capacity=2, updated_by="staffer")

    assert privacy.answers_retention_sweep(now=STARTS + timedelta(days=2)) == 0
    assert _answers_left() == 3
    assert retention_get(event_id=event.event_id).due_at == STARTS + timedelta(days=11)
    assert privacy.answers_retention_sweep(now=STARTS + timedelta(days=11)) == 1
    assert _answers_left() == 0


def test_staff_setting_is_versioned_and_bounded(ddb):
    event = make_event(capacity=2)
    first = privacy.retention_set(event_id=event.event_id, days=30, expected_version=None, updated_by="ann")
    assert first.version == 1
    with pytest.raises(RegistrationError) as stale:
        privacy.retention_set(event_id=event.event_id, days=10, expected_version=None, updated_by="bob")
    assert stale.value.code == "conflict"
    assert privacy.retention_set(event_id=event.event_id, days=10, expected_version=1, updated_by="bob").version == 2
    for days in (-1, 3651):
        with pytest.raises(RegistrationError) as bad:
            privacy.retention_set(event_id=event.event_id, days=days, expected_version=2, updated_by="bob")
        assert bad.value.code == "invalid"
    assert privacy.retention_set(event_id=event.event_id, days=None, expected_version=2, updated_by="bob") is None
    assert retention_get(event_id=event.event_id) is None
    with pytest.raises(RegistrationError) as missing:
        privacy.retention_set(event_id="nosuchevent1", days=3, expected_version=None, updated_by="bob")
    assert missing.value.code == "not_found"


def test_the_erase_also_removes_answers_of_kept_history(ddb):
    alice = person("alice", "alice@uni.test")
    past, attended = past_event_with(alice)
    seed_registration_answers(past.event_id, attended, alice, {"diet": "secret"})
    key = user_key(alice)

    privacy.personal_data_erase(user=alice, now=ERASED_AT)

    assert _answers_left() == 0
    kept = Registration.get(*Registration.user_key_for(key, attended["registration_id"]), consistent_read=True)
    claim = RegistrationClaim.get(*RegistrationClaim.key_for(past.event_id, key), consistent_read=True)
    assert kept.user_name == claim.user_name == privacy.pseudonym_for(key)
