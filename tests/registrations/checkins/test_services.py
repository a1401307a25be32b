"""Check-in at the door on DynamoDB Local: once per ticket, once per scan, refusals with their reason."""

from __future__ import annotations

import functools
import uuid

import botocore.exceptions
import pytest

from registrations import services as registration_services
from registrations.checkins import selectors, services
from registrations.checkins.models import CheckIn
from registrations.errors import RegistrationError
from registrations.ticket_tokens import ticket_token
from tems.dynamo import transaction_connection
from tems.metering import metered
from tems.outbox import OutboxMessage
from tests.helpers import assert_invariants_clean
from tests.race import WindowHeldOpen, race
from tests.registrations.checkins.helpers import STAFF, confirmed_ticket, naive_checkin, real_checkin, scan
from tests.registrations.helpers import make_event, new_key, register

DOORS = 20


def outbox_of(message_type: str) -> list[dict]:
    messages = OutboxMessage.scan(OutboxMessage.entity == "OutboxMessage")
    return [m.data for m in messages if m.message_type == message_type]


def test_a_first_check_in_is_one_request_and_records_everything(ddb):
    event = make_event(capacity=5)
    ticket = confirmed_ticket(event.event_id, "ann")
    with metered() as meter:
        outcome = scan(event.event_id, ticket, door="B")
    assert dict(meter.requests) == {"TransactWriteItems": 1}
    assert outcome.kind == "checked_in" and outcome.response.status == 201
    body = outcome.data
    assert set(body) == {"registration_id", "user", "status", "checked_in_at", "checked_in_by", "door"}
    assert (body["user"], body["status"], body["checked_in_by"], body["door"]) == ("ann", "checked_in", STAFF, "B")
    assert selectors.checkin_stats(event_id=event.event_id) == {"confirmed": 1, "checked_in": 1}
    [recorded] = outbox_of("CheckInRecorded")
    assert recorded["registration_id"] == body["registration_id"] and recorded["event_id"] == event.event_id
    assert [(e.action, e.by, e.door) for e in selectors.checkin_history(event_id=event.event_id)] == [
        ("checked_in", STAFF, "B")]
    assert_invariants_clean()


def test_the_same_scan_again_is_replayed_byte_for_byte_in_one_request(ddb):
    event = make_event(capacity=5)
    ticket = confirmed_ticket(event.event_id, "ann")
    key = new_key()
    first = scan(event.event_id, ticket, key=key)
    with metered() as meter:
        again = scan(event.event_id, ticket, key=key)
    assert dict(meter.requests) == {"TransactWriteItems": 1}
    assert again.kind == "replayed" and again.response == first.response
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 1


def test_another_scan_is_already_checked_in_with_the_first_details(ddb):
    event = make_event(capacity=5)
    ticket = confirmed_ticket(event.event_id, "ann")
    first = scan(event.event_id, ticket, door="B", staff="staff2").data
    key = new_key()
    later = scan(event.event_id, ticket, door="C", staff="staff3", key=key)
    assert later.kind == "already_checked_in" and later.response.status == 200
    assert later.data == {**first, "status": "already_checked_in"}
    # That answer is stored under the second scan's key too: its retry gets the same bytes.
    assert scan(event.event_id, ticket, door="C", staff="staff3", key=key).response == later.response
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 1


def test_a_key_reused_for_another_ticket_is_unprocessable(ddb):
    event = make_event(capacity=5)
    key = new_key()
    scan(event.event_id, confirmed_ticket(event.event_id, "ann"), key=key)
    with pytest.raises(RegistrationError) as caught:
        scan(event.event_id, confirmed_ticket(event.event_id, "bob"), key=key)
    assert caught.value.code == "unprocessable"


@pytest.mark.parametrize("text", ["", "   ", "hello", "TEMS-REGISTRATION:" + "a" * 32, "x" * 5000])
def test_an_unreadable_ticket_is_invalid(ddb, text):
    event = make_event(capacity=5)
    with pytest.raises(RegistrationError) as caught:
        scan(event.event_id, text)
    assert caught.value.code == "invalid"


def test_forged_and_tampered_tickets_are_refused_and_change_nothing(ddb):
    event = make_event(capacity=5)
    genuine = confirmed_ticket(event.event_id, "ann")
    registration_id = register(event.event_id, "bob").data["registration_id"]
    payload, signature = genuine.rstrip("/").rsplit("/", 1)[1].split(":")
    forged = [
        # bob's real registration id with a signature made up by the forger
        ticket_token(event_id=event.event_id, registration_id=registration_id, user_id="bob").split(":")[0]
        + ":" + signature,
        genuine.replace(signature, signature[:-2] + ("AA" if not signature.endswith("AA") else "BB")),
        payload,  # no signature at all
    ]
    for text in forged:
        with pytest.raises(RegistrationError) as caught:
            scan(event.event_id, text)
        assert caught.value.code == "invalid" and caught.value.extra["reason"] == "forged", text
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 0


def test_another_events_ticket_is_refused(ddb):
    event, other = make_event(capacity=5), make_event(capacity=5)
    ticket = confirmed_ticket(other.event_id, "ann")
    with pytest.raises(RegistrationError) as caught:
        scan(event.event_id, ticket)
    assert (caught.value.code, caught.value.extra["reason"]) == ("conflict", "other_event")


def test_a_waitlisted_registration_is_not_admissible(ddb):
    event = make_event(capacity=1)
    confirmed_ticket(event.event_id, "ann")
    waiting = register(event.event_id, "bob").data
    assert waiting["status"] == "waitlisted"
    with pytest.raises(RegistrationError) as caught:
        scan(event.event_id, waiting["ticket_url"])
    assert (caught.value.code, caught.value.extra["reason"]) == ("conflict", "waitlisted")
    assert selectors.checkin_list(event_id=event.event_id) == []
    assert outbox_of("CheckInRecorded") == []
    assert_invariants_clean()


def test_a_cancelled_registration_is_not_admissible(ddb):
    event = make_event(capacity=5)
    data = register(event.event_id, "ann").data
    registration_services.registration_cancel(user_id="ann", registration_id=data["registration_id"])
    with pytest.raises(RegistrationError) as caught:
        scan(event.event_id, data["ticket_url"])
    assert (caught.value.code, caught.value.extra["reason"]) == ("conflict", "cancelled")
    assert selectors.checkin_stats(event_id=event.event_id) == {"confirmed": 0, "checked_in": 0}


def test_a_promoted_registration_becomes_admissible(ddb):
    event = make_event(capacity=1)
    first = register(event.event_id, "ann").data
    waiting = register(event.event_id, "bob").data
    registration_services.registration_cancel(user_id="ann", registration_id=first["registration_id"])
    assert scan(event.event_id, waiting["ticket_url"]).response.status == 201


# --- races -------------------------------------------------------------------------------------------------


def doors_race(checkin, event_id: str, ticket: str) -> list[dict]:
    return race([lambda n=n: checkin(event_id=event_id, ticket_text=ticket, door=f"door-{n}", staff_id=f"staff{n}",
                                     idempotency_key=new_key(), fingerprint=f"door-{n}")
                 for n in range(DOORS)])


def assert_one_check_in(event_id: str, answers: list[dict]) -> None:
    """The promise: one check-in, counted once, and every door's answer names that same check-in."""
    statuses = sorted(answer["status"] for answer in answers)
    assert statuses.count("checked_in") == 1, f"{statuses.count('checked_in')} doors admitted one ticket"
    assert statuses.count("already_checked_in") == DOORS - 1
    named = {(a["checked_in_at"], a["checked_in_by"], a["door"]) for a in answers}
    assert len(named) == 1, f"the doors were told of {len(named)} different first check-ins"
    [stored] = list(CheckIn.query(CheckIn.key_for(event_id, "")[0], CheckIn.sk.startswith(CheckIn.SK_PREFIX)))
    assert named == {(stored.checked_in_at.isoformat(), stored.checked_in_by, stored.door)}
    assert selectors.checkin_stats(event_id=event_id)["checked_in"] == 1


def test_twenty_doors_scanning_one_ticket_admit_it_once(ddb):
    event = make_event(capacity=5)
    ticket = confirmed_ticket(event.event_id, "ann")
    answers = doors_race(real_checkin, event.event_id, ticket)
    assert_one_check_in(event.event_id, answers)
    assert len(outbox_of("CheckInRecorded")) == 1
    assert_invariants_clean()


def test_the_race_test_catches_a_read_then_write_check_in(ddb):
    """The same race and the same check on the naive handler must fail, or the test above proves nothing."""
    event = make_event(capacity=5)
    ticket = confirmed_ticket(event.event_id, "ann")
    answers = doors_race(functools.partial(naive_checkin, window=WindowHeldOpen()), event.event_id, ticket)
    with pytest.raises(AssertionError, match="doors admitted one ticket"):
        assert_one_check_in(event.event_id, answers)


# --- lost answers ------------------------------------------------------------------------------------------


@pytest.fixture
def lose_first_answer():
    """A botocore hook: the first TransactWriteItems reaches DynamoDB and commits, then its answer is lost.

    ``mode`` 'raise' makes the call fail as a dropped connection would (the caller retries with the same key);
    'sdk_retry' makes botocore itself resend the very same request, as its retry handler does on a timeout.
    """
    events = transaction_connection().client.meta.events
    state = {"mode": None, "lost": 0}

    def after_call(**kwargs):
        if state["mode"] == "raise" and state["lost"] == 0:
            state["lost"] += 1
            raise botocore.exceptions.ReadTimeoutError(endpoint_url="dynamodb-local")

    def needs_retry(attempts, **kwargs):
        if state["mode"] == "sdk_retry" and attempts == 1:
            state["lost"] += 1
            return 0  # resend now: the first request committed but "never answered"
        return None

    events.register("after-call.dynamodb.TransactWriteItems", after_call, unique_id="test-lose-answer")
    events.register_first("needs-retry.dynamodb.TransactWriteItems", needs_retry, unique_id="test-sdk-retry")

    def arm(mode: str) -> dict:
        state["mode"] = mode
        return state

    yield arm
    events.unregister("after-call.dynamodb.TransactWriteItems", unique_id="test-lose-answer")
    events.unregister("needs-retry.dynamodb.TransactWriteItems", unique_id="test-sdk-retry")


def test_a_check_in_whose_answer_was_lost_is_applied_once_when_the_door_retries(ddb, lose_first_answer):
    event = make_event(capacity=5)
    ticket = confirmed_ticket(event.event_id, "ann")
    key = new_key()
    state = lose_first_answer("raise")
    with pytest.raises(Exception):  # noqa: B017 - whichever layer wraps the dropped connection
        scan(event.event_id, ticket, key=key)
    assert state["lost"] == 1
    retried = scan(event.event_id, ticket, key=key)
    assert retried.kind == "replayed" and retried.response.status == 201
    assert retried.data["status"] == "checked_in"
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 1
    assert len(outbox_of("CheckInRecorded")) == 1
    assert_invariants_clean()


def test_a_check_in_resent_by_the_sdk_after_a_lost_answer_is_applied_once(ddb, lose_first_answer):
    event = make_event(capacity=5)
    ticket = confirmed_ticket(event.event_id, "ann")
    state = lose_first_answer("sdk_retry")
    outcome = scan(event.event_id, ticket)
    assert state["lost"] == 1
    # The resent request found its own record: the door still gets the check-in's 201, once.
    assert outcome.response.status == 201 and outcome.data["status"] == "checked_in"
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 1
    assert len(outbox_of("CheckInRecorded")) == 1
    assert_invariants_clean()


# --- undo --------------------------------------------------------------------------------------------------


def test_undo_takes_a_check_in_back_once_and_is_logged(ddb):
    event = make_event(capacity=5)
    ticket = confirmed_ticket(event.event_id, "ann")
    registration_id = scan(event.event_id, ticket).data["registration_id"]
    undone = services.checkin_undo(event_id=event.event_id, registration_id=registration_id, undone_by="boss")
    assert undone == {"registration_id": registration_id, "status": "not_checked_in"}
    assert services.checkin_undo(event_id=event.event_id, registration_id=registration_id, undone_by="boss") == undone
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 0
    assert [m["undone_by"] for m in outbox_of("CheckInUndone")] == ["boss"]
    assert [e.action for e in selectors.checkin_history(event_id=event.event_id)] == ["checked_in", "undone"]
    again = scan(event.event_id, ticket)
    assert again.kind == "checked_in"
    assert_invariants_clean()


def test_undo_of_an_unknown_registration_changes_nothing(ddb):
    event = make_event(capacity=5)
    assert services.checkin_undo(event_id=event.event_id, registration_id=uuid.uuid4().hex,
                                 undone_by="boss")["status"] == "not_checked_in"
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 0
    assert outbox_of("CheckInUndone") == []
