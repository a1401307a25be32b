"""Where a registration lives (issue 13): nothing of it in the event's own partition, and events stored before
moved into the current layout without ever letting a student register twice (DynamoDB Local; the race next to
the broken variant it catches)."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from django.core.management import call_command

from registrations import attendees, selectors, services
from registrations.models import (
    CONFIRMED,
    CURRENT_LAYOUT,
    WAITLISTED,
    Event,
    EventSeats,
    Registration,
    RegistrationClaim,
    SeatShard,
    layout_of,
)
from registrations.seating import shards
from registrations.services import upgrade as upgrade_service
from tems.dynamo import boto3_client, current_config
from tems.metering import metered
from tests.helpers import assert_invariants_clean, broken_invariants
from tests.race import race
from tests.registrations.checkins.helpers import scan
from tests.registrations.helpers import (
    STARTS,
    into_legacy_layout,
    make_event,
    register,
    seat_taken_under,
)

LAYOUT_CHECK = "registrations are kept where their event's layout puts them"
OLD = ("ann", "bob", "cat", "dan", "eve")  # three seats, then two on the waiting list
NOT_UPGRADED = "every event is in the current shape"


@pytest.fixture(autouse=True)
def small_shards(settings):
    settings.SEATS_PER_SHARD = 2  # three seats, two shards: the mark must reach every one


def event_partition(event_id: str) -> list[str]:
    """The sort keys of every item in the event's own partition."""
    pages = boto3_client().get_paginator("query").paginate(
        TableName=current_config().table_name, ConsistentRead=True, KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": Event.pk_for(event_id)}}, ProjectionExpression="SK")
    return [item["SK"]["S"] for page in pages for item in page["Items"]]


def registration_items_in_event_partition(event_id: str) -> list[str]:
    return [sk for sk in event_partition(event_id)
            if sk.startswith((RegistrationClaim.SK_PREFIX, Registration.SK_PREFIX))]


def event_layouts(event_id: str) -> set[int]:
    """The layout of the event's item and of each of its seat shards."""
    event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    read = shards.shards_get(event_id=event_id, count=int(event.seat_shards))
    return {layout_of(event.layout), *(layout_of(shard.layout) for shard in read)}


def live_registrations_of(user_id: str, event_id: str) -> list[Registration]:
    return [r for r in Registration.query(Registration.user_pk_for(user_id),
                                          Registration.sk.startswith(Registration.SK_PREFIX), consistent_read=True)
            if r.event_id == event_id]


@pytest.fixture
def old_event(ddb):
    """An event as stored before the layout: ann, bob and cat hold its three seats, dan and eve wait."""
    event = make_event(capacity=3)
    first = {user: register(event.event_id, user, user_name=user.title()).data for user in OLD}
    into_legacy_layout(event.event_id)
    assert len(registration_items_in_event_partition(event.event_id)) == 2 * len(OLD)
    return event, first


# --- the current layout ----------------------------------------------------------------------------------------


def test_a_first_registration_writes_nothing_into_the_event_partition(ddb):
    event = make_event(capacity=5)
    with metered() as meter:
        outcome = register(event.event_id, "ann", user_name="Ann")
    assert dict(meter.requests) == {"TransactWriteItems": 1}
    assert event_partition(event.event_id) == [Event.METADATA]
    registration_id = outcome.data["registration_id"]
    claim = RegistrationClaim.get(*RegistrationClaim.key_for(event.event_id, "ann"), consistent_read=True)
    [copy] = selectors.event_registrations(event_id=event.event_id)
    user_copy = Registration.get(*Registration.user_key_for("ann", registration_id), consistent_read=True)
    assert (claim.pk, claim.registration_id) == (Registration.user_pk_for("ann"), registration_id)
    assert (copy.pk, copy.sk) == Registration.event_key_for(event.event_id, registration_id)
    assert (copy.gsi1pk, copy.gsi1sk) == Registration.attendee_index_key_for(event.event_id, "Ann", registration_id)
    assert user_copy.layout == CURRENT_LAYOUT and event_layouts(event.event_id) == {CURRENT_LAYOUT}
    assert_invariants_clean()


# --- events stored before: the upgrade --------------------------------------------------------------------------


def test_the_command_moves_an_old_event_and_nobody_registers_twice(old_event):
    event, first = old_event
    # The legacy layout is consistent in itself; its waiting entries, bare as then, are an older shape.
    assert set(broken_invariants()) == {NOT_UPGRADED}
    out = io.StringIO()
    call_command("upgrade_registrations", "--event", event.event_id, stdout=out)
    assert f"{event.event_id}: {len(OLD)} registration(s) moved, now in the current layout" in out.getvalue()
    assert registration_items_in_event_partition(event.event_id) == []
    assert event_layouts(event.event_id) == {CURRENT_LAYOUT}
    assert set(broken_invariants()) == {NOT_UPGRADED}  # the other steps of event_upgrade are still to run
    for user in OLD:
        again = register(event.event_id, user)
        assert (again.response.status, again.data["registration_id"]) == (200, first[user]["registration_id"])
    page = attendees.attendee_page(event_id=event.event_id)
    assert [(row["user"], row["position"]) for row in page.items] == [
        ("Ann", None), ("Bob", None), ("Cat", None), ("Dan", 1), ("Eve", 2)]
    out = io.StringIO()
    call_command("upgrade_registrations", "--event", event.event_id, stdout=out)
    assert "already in the current layout" in out.getvalue()
    call_command("upgrade_events", stdout=io.StringIO())
    assert_invariants_clean()


def test_an_old_event_is_read_where_its_layout_keeps_it_until_upgraded(old_event):
    event, _ = old_event
    stored = selectors.event_get(event_id=event.event_id)
    claim = selectors.claim_get(event_id=event.event_id, user_id="dan", layout=stored.registration_layout)
    assert claim is not None and claim.status == WAITLISTED
    page = attendees.attendee_page(event_id=event.event_id, layout=stored.registration_layout)
    assert [row["user"] for row in page.items] == ["Ann", "Bob", "Cat", "Dan", "Eve"]


def test_a_registration_on_an_old_event_moves_it_first_then_answers(old_event):
    event, first = old_event
    again = register(event.event_id, "bob")
    assert (again.response.status, again.data["registration_id"]) == (200, first["bob"]["registration_id"])
    assert event_layouts(event.event_id) == {CURRENT_LAYOUT}
    newcomer = register(event.event_id, "fay")
    assert (newcomer.data["status"], newcomer.data["position_at_most"]) == (WAITLISTED, 3)
    assert registration_items_in_event_partition(event.event_id) == []
    assert_invariants_clean()


def test_cancels_and_a_check_in_on_an_old_event_move_it_first(old_event):
    event, first = old_event
    services.registration_cancel(user_id="eve", registration_id=first["eve"]["registration_id"])
    assert event_layouts(event.event_id) == {CURRENT_LAYOUT}
    assert_invariants_clean()

    other = make_event(capacity=3)
    ticket = register(other.event_id, "ann").data["ticket_url"]
    register(other.event_id, "bob")
    into_legacy_layout(other.event_id)
    assert scan(other.event_id, ticket).kind == "checked_in"
    # The freed seat goes to the head of the queue, written under the current keys.
    services.registration_cancel(user_id="ann", registration_id=first["ann"]["registration_id"])
    assert selectors.claim_get(event_id=event.event_id, user_id="dan").status == CONFIRMED
    assert event_layouts(other.event_id) == {CURRENT_LAYOUT}
    assert_invariants_clean()


def test_a_capacity_raise_on_an_old_event_adds_shards_in_its_layout_then_promotes(old_event):
    event, _ = old_event
    current = selectors.event_get(event_id=event.event_id)
    update = services.event_update(event_id=event.event_id, expected_version=int(current.version),
                                   title=current.title, description="", location="", starts_at=STARTS, capacity=9,
                                   updated_by="staff")
    assert update.promoted == 2
    assert [selectors.claim_get(event_id=event.event_id, user_id=u).status for u in ("dan", "eve")] == [CONFIRMED] * 2
    assert event_layouts(event.event_id) == {CURRENT_LAYOUT}
    assert int(EventSeats.get(*EventSeats.key_for(event.event_id)).seat_shards) == 5
    assert_invariants_clean()


def test_the_upgrade_racing_registrations_and_cancels_keeps_every_invariant(ddb):
    event = make_event(capacity=12)
    old = [f"old{n:02d}" for n in range(16)]  # 12 seats taken, 4 waiting
    first = {user: register(event.event_id, user).data["registration_id"] for user in old}
    into_legacy_layout(event.event_id)
    retaps, cancels = old[:6], old[6:10] + old[13:15]
    newcomers = [f"new{n:02d}" for n in range(6)]
    calls = [lambda: upgrade_service.layout_upgrade(event_id=event.event_id) for _ in range(2)]
    calls += [lambda u=u: register(event.event_id, u) for u in retaps]
    calls += [lambda u=u: services.registration_cancel(user_id=u, registration_id=first[u]) for u in cancels]
    calls += [lambda u=u: register(event.event_id, u) for u in newcomers]
    results = race(calls)
    upgrades, answers = results[:2], results[2:2 + len(retaps)]
    assert sum(upgrade.moved for upgrade in upgrades) <= len(old) and not any(u.duplicates for u in upgrades)
    for user, answer in zip(retaps, answers, strict=True):
        assert (answer.response.status, answer.data["registration_id"]) == (200, first[user]), user
    for user in old + newcomers:
        assert len(live_registrations_of(user, event.event_id)) == (0 if user in cancels else 1), user
    assert registration_items_in_event_partition(event.event_id) == []
    assert event_layouts(event.event_id) == {CURRENT_LAYOUT}
    assert Counter(r.user_id for r in selectors.event_registrations(event_id=event.event_id)).most_common(1)[0][1] == 1
    assert_invariants_clean()


def test_a_seat_taken_without_the_layout_condition_lets_an_old_student_register_twice(ddb, monkeypatch):
    """The gate must be able to fail: a seat taken without ``layout = current`` writes the claim under the
    current key while the student's first claim still sits under the legacy one, and nothing refuses it."""
    event = make_event(capacity=4)
    first = register(event.event_id, "ann").data["registration_id"]
    into_legacy_layout(event.event_id)
    seat_taken_under(monkeypatch, lambda attempt: SeatShard.pk.exists() & (SeatShard.taken < SeatShard.capacity))
    again = register(event.event_id, "ann")
    assert again.kind == "created" and again.data["registration_id"] != first
    assert len(live_registrations_of("ann", event.event_id)) == 2  # one student, two seats
    # The upgrade cannot move the first (the current key is taken): it reports it, and the check names it.
    done = upgrade_service.layout_upgrade(event_id=event.event_id)
    assert done.marked and done.duplicates == [("ann", first)]
    assert any("under the legacy keys" in problem for problem in broken_invariants()[LAYOUT_CHECK])


# --- the invariant checks in the current layout -----------------------------------------------------------------


def _kept(item) -> dict:
    return {name: value for name, value in item.attribute_values.items() if name not in {"pk", "sk"}}


def test_invariants_catch_a_missing_or_extra_claim_or_copy_in_the_current_layout(ddb):
    event = make_event(capacity=5)
    ann = register(event.event_id, "ann").data["registration_id"]
    register(event.event_id, "bob")
    assert_invariants_clean()
    matching = "every claim has both registration items and every registration its claim"

    claim = RegistrationClaim.get(*RegistrationClaim.key_for(event.event_id, "ann"), consistent_read=True)
    claim.delete()
    assert matching in broken_invariants()
    claim.save()
    assert_invariants_clean()

    # A claim of ann's left under the legacy key beside the current one: two claims for one registration.
    RegistrationClaim(*RegistrationClaim.legacy_key_for(event.event_id, "ann"), **_kept(claim)).save()
    found = broken_invariants()
    assert matching in found and any("1 claim(s) or event-side registration(s) are under the legacy keys" in p
                                     for p in found[LAYOUT_CHECK])
    RegistrationClaim(*RegistrationClaim.legacy_key_for(event.event_id, "ann")).delete()
    assert_invariants_clean()

    copy = Registration.get(*Registration.event_key_for(event.event_id, ann), consistent_read=True)
    wrong = Registration.event_pk_for(event.event_id, (Registration.bucket_for(ann) + 1) % 16)
    Registration(wrong, copy.sk, **_kept(copy)).save()
    assert any("not in the bucket" in p for p in broken_invariants()[LAYOUT_CHECK])  # and an extra copy
    assert matching in broken_invariants()
    Registration(wrong, copy.sk).delete()
    copy.delete()
    assert matching in broken_invariants()  # a missing copy
    copy.save()

    Registration(*Registration.user_key_for("ann", ann)).update(actions=[Registration.layout.remove()])
    assert any("not marked as moved" in p for p in broken_invariants()[LAYOUT_CHECK])
    Registration(*Registration.user_key_for("ann", ann)).update(actions=[Registration.layout.set(CURRENT_LAYOUT)])
    SeatShard(*SeatShard.key_for(event.event_id, 0)).update(actions=[SeatShard.layout.remove()])
    assert any("seat shard(s) in layout" in p for p in broken_invariants()[LAYOUT_CHECK])
