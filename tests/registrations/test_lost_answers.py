"""Every registrations write survives losing its answer (and throttles, conflicts, a crash after commit).

Each test loses the answer of one kind of write (tests.support.faults: applied, then botocore sees a dropped connection
and retries the same request) and asserts the answer and the state after the SDK's retry.
"""

import json

import pytest
from django.test import Client

from registrations import selectors, services
from registrations.events import services as event_services
from registrations.events import services as events_module
from registrations.events.models import Event
from registrations.models import WaitlistEntry
from registrations.seating.shards import event_seat_counts
from tems.outbox import outbox_relay
from tests.helpers import assert_invariants_clean
from tests.registrations.helpers import STARTS, make_event, new_key, register
from tests.support.faults import CONFLICT, LOST, THROTTLE, WRITE_OPERATIONS, Fault, inject

TRANSACT = {"TransactWriteItems"}


def touches(fragment: str):
    """A request whose parameters mention ``fragment`` (a key prefix such as ``WAITLIST#``)."""
    return lambda params: fragment in json.dumps(params)


def edit(event_id: str, version: int, **changes):
    fields = {"title": "Open day", "description": "", "location": "", "starts_at": STARTS, "capacity": 5}
    return event_services.event_update(event_id=event_id, expected_version=version, updated_by="editor",
                                 **{**fields, **changes})


def statuses(event_id: str, users) -> list[str]:
    return [selectors.claim_get(event_id=event_id, user_id=user).status for user in users]


# --- registration, waitlist join, cancel, promotion ------------------------------------------------------------

def test_registration_answer_lost_is_created_once(ddb):
    event = make_event(capacity=2)
    with inject(Fault(LOST, operations=TRANSACT, times=1)) as faults:
        outcome = register(event.event_id, "ann")
    assert faults.fired(LOST) and outcome.kind == "created" and outcome.response.status == 201
    assert event_seat_counts(event.event_id).registered == 1
    assert_invariants_clean()


def test_waitlist_join_answer_lost_is_joined_once(ddb):
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    with inject(Fault(LOST, operations=TRANSACT, times=1, when=touches(WaitlistEntry.SK_PREFIX))) as faults:
        outcome = register(event.event_id, "bob")
    assert faults.fired(LOST)
    assert (outcome.kind, outcome.data["status"], outcome.data["position_at_most"]) == ("created", "waitlisted", 1)
    assert event_seat_counts(event.event_id).waiting == 1
    assert_invariants_clean()


def test_cancel_answer_lost_cancels_once_and_promotes_the_head(ddb):
    event = make_event(capacity=1)
    ann = register(event.event_id, "ann").data
    register(event.event_id, "bob")
    with inject(Fault(LOST, operations=TRANSACT, times=1)) as faults:
        result = services.registration_cancel(user_id="ann", registration_id=ann["registration_id"])
    assert faults.fired(LOST) and result["status"] == "cancelled"
    assert statuses(event.event_id, ["bob"]) == ["confirmed"]
    assert_invariants_clean()


def test_promotion_answer_lost_promotes_once(ddb):
    event = make_event(capacity=1)
    for user in ("ann", "bob", "cat"):
        register(event.event_id, user)
    with inject(Fault(LOST, operations=TRANSACT, when=touches(WaitlistEntry.SK_PREFIX))) as faults:
        edit(event.event_id, 1, capacity=3)
    assert faults.fired(LOST)
    assert statuses(event.event_id, ["bob", "cat"]) == ["confirmed", "confirmed"]
    assert_invariants_clean()


# --- event create ----------------------------------------------------------------------------------------------

def test_event_create_answer_lost_is_no_false_conflict(ddb):
    with inject(Fault(LOST, times=1)) as faults:
        event = make_event(title="Created once")
    assert faults.fired(LOST)
    assert selectors.event_get(event_id=event.event_id).title == "Created once"


API_EVENT = {"title": "Robotics night", "starts_at": "2027-03-01T18:30:00+00:00", "capacity": 12}


def create_via_api(client, key, body=API_EVENT):
    return client.post("/api/events", data=json.dumps(body), content_type="application/json",
                       HTTP_IDEMPOTENCY_KEY=key)


def test_api_event_create_answer_lost_then_retried_with_the_key_replays_one_event(ddb, staff_client):
    key = new_key()
    with inject(Fault(LOST, times=1)) as faults:
        first = create_via_api(staff_client, key)
    assert faults.fired(LOST)
    assert first.status_code == 201, first.content
    again = create_via_api(staff_client, key)
    assert again.status_code == 201 and again.content == first.content
    assert again["Idempotent-Replayed"] == "true" and again["Location"] == first["Location"]
    assert [e["id"] for e in staff_client.get("/api/events").json()["events"]] == [first.json()["id"]]


def test_api_event_create_needs_a_key_and_a_reused_key_for_another_event_is_422(ddb, staff_client):
    response = staff_client.post("/api/events", data=json.dumps(API_EVENT), content_type="application/json")
    assert response.status_code == 400
    key = new_key()
    assert create_via_api(staff_client, key).status_code == 201
    assert create_via_api(staff_client, key, {**API_EVENT, "title": "Another"}).status_code == 422
    assert len(staff_client.get("/api/events").json()["events"]) == 1


PAGE_EVENT = {"title": "Debate night", "description": "", "location": "", "starts_at": "2027-05-01T10:00",
              "capacity": "4"}


def test_page_event_create_answer_lost_then_resubmitted_makes_one_event(ddb, staff_client):
    form = staff_client.get("/events/new/").content.decode()
    assert 'name="idempotency_key"' in form and "data-idempotent" in form
    key = new_key()
    with inject(Fault(LOST, times=1)):
        first = staff_client.post("/events/new/", {**PAGE_EVENT, "idempotency_key": key})
    assert first.status_code == 302, first.content
    again = staff_client.post("/events/new/", {**PAGE_EVENT, "idempotency_key": key})
    assert again.status_code == 302 and again["Location"] == first["Location"]
    upcoming, past = selectors.event_list()
    assert [e.title for e in upcoming + past] == ["Debate night"]


# --- event edit ------------------------------------------------------------------------------------------------

def test_event_edit_answer_lost_is_saved_not_a_false_conflict(ddb):
    event = make_event()
    with inject(Fault(LOST, times=1, when=touches(Event.pk_for(event.event_id)))) as faults:
        edit(event.event_id, 1, title="Renamed")
    assert faults.fired(LOST)
    stored = selectors.event_get(event_id=event.event_id)
    assert (stored.title, stored.version) == ("Renamed", 2)


def edit_form(event_id: str, version: int, **changes) -> dict:
    return {"title": "Open day", "description": "", "location": "", "starts_at": "2027-05-01T10:00",
            "capacity": "5", "version": str(version), **changes}


def test_page_edit_answer_lost_is_reported_saved(ddb, staff_client):
    event = make_event()
    with inject(Fault(LOST, times=1, when=touches(Event.pk_for(event.event_id)))):
        response = staff_client.post(f"/events/{event.event_id}/edit/", edit_form(event.event_id, 1, title="Mine"))
    assert response.status_code == 302, response.content.decode()
    assert selectors.event_get(event_id=event.event_id).title == "Mine"


def test_capacity_raise_with_promotion_lost_answer_leaves_no_seat_free(ddb):
    # The case: capacity 3, 2 confirmed, 2 waiting.
    event = make_event(capacity=1)
    for user in ("ann", "bob", "cat"):
        register(event.event_id, user)
    edit(event.event_id, 1, capacity=2)
    with inject(Fault(LOST, times=1, when=touches(Event.pk_for(event.event_id)))):
        edit(event.event_id, 2, capacity=3)
    assert statuses(event.event_id, ["bob", "cat"]) == ["confirmed", "confirmed"]
    assert register(event.event_id, "dan").data["status"] == "waitlisted"
    assert_invariants_clean()


@pytest.mark.parametrize("kind", [THROTTLE, CONFLICT])
def test_promotion_failing_after_the_edit_commits_is_reported_saved_and_healed(ddb, staff_client, kind):
    event = make_event(capacity=1)
    for user in ("ann", "bob", "cat"):
        register(event.event_id, user)
    fault = Fault(kind, operations=TRANSACT, final_attempt_too=True, when=touches(WaitlistEntry.SK_PREFIX))
    with inject(fault) as faults:
        response = staff_client.post(f"/events/{event.event_id}/edit/", edit_form(event.event_id, 1, capacity="3"))
    assert faults.fired(kind)
    assert response.status_code == 302, response.content.decode()
    page = staff_client.get(response["Location"]).content.decode()
    assert "Saved" in page and "waiting list" in page
    assert selectors.event_get(event_id=event.event_id).capacity == 3
    outbox_relay(handlers=None)
    assert statuses(event.event_id, ["bob", "cat"]) == ["confirmed", "confirmed"]
    assert_invariants_clean()


class Crash(BaseException):
    """The process dies: nothing after this point runs, not even an ``except Exception``."""


def test_edit_process_dying_right_after_commit_is_healed_by_the_outbox(ddb, monkeypatch):
    event = make_event(capacity=1)
    for user in ("ann", "bob", "cat"):
        register(event.event_id, user)

    def die(**_):
        raise Crash

    monkeypatch.setattr(events_module, "waitlist_promote", die)
    with pytest.raises(Crash):
        edit(event.event_id, 1, capacity=3)
    monkeypatch.undo()
    assert selectors.event_get(event_id=event.event_id).capacity == 3  # the edit committed
    outbox_relay()
    assert statuses(event.event_id, ["bob", "cat"]) == ["confirmed", "confirmed"]
    assert_invariants_clean()


def test_a_registration_that_sees_free_seats_and_a_waitlist_finishes_the_promotion(ddb, monkeypatch):
    event = make_event(capacity=1)
    for user in ("ann", "bob", "cat"):
        register(event.event_id, user)
    monkeypatch.setattr(events_module, "waitlist_promote", lambda **_: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        edit(event.event_id, 1, capacity=4)
    monkeypatch.undo()
    # No relay ran: the next student's registration promotes the two waiting first, then takes the last seat.
    outcome = register(event.event_id, "dan")
    assert outcome.data["status"] == "confirmed"
    assert statuses(event.event_id, ["bob", "cat", "dan"]) == ["confirmed"] * 3
    assert_invariants_clean()


def test_raising_capacity_from_1_to_100_promotes_all_70_waiting(ddb):
    event = make_event(capacity=1)
    users = [f"s{n:03d}" for n in range(71)]
    for user in users:
        register(event.event_id, user)
    edit(event.event_id, 1, capacity=100)
    stored = event_seat_counts(event.event_id)
    assert (stored.registered, stored.waiting) == (71, 0)
    assert_invariants_clean()


# --- cancel through the API and the page, with its idempotency record -------------------------------------------

def register_via_api(client, event_id, key):
    return client.post(f"/api/events/{event_id}/registrations", data="{}", content_type="application/json",
                       HTTP_IDEMPOTENCY_KEY=key)


def cancel_via_api(client, registration_id, key):
    return client.delete(f"/api/registrations/{registration_id}", HTTP_IDEMPOTENCY_KEY=key)


def test_api_cancel_whose_every_answer_is_lost_is_replayed_as_cancelled(ddb, student_client):
    event = make_event(capacity=2)
    mine = register_via_api(student_client, event.event_id, new_key()).json()
    key = new_key()
    # Applied on the first attempt, every answer dropped: to the client the request simply failed.
    with inject(Fault(LOST, final_attempt_too=True)), pytest.raises(Exception):  # noqa: B017 - any transport error
        cancel_via_api(student_client, mine["registration_id"], key)
    again = cancel_via_api(student_client, mine["registration_id"], key)
    assert again.status_code == 200, again.content
    assert again.json() == {"registration_id": mine["registration_id"], "event_id": event.event_id,
                            "status": "cancelled"}
    assert event_seat_counts(event.event_id).registered == 0
    assert_invariants_clean()


def test_api_cancel_with_every_other_write_throttled_answers_cancelled_and_replays(ddb, student_client):
    event = make_event(capacity=2)
    mine = register_via_api(student_client, event.event_id, new_key()).json()
    key = new_key()
    # Only the cancel's own transaction gets through: anything written after it (marking a key done) fails.
    others = Fault(THROTTLE, operations=WRITE_OPERATIONS - TRANSACT, final_attempt_too=True)
    with inject(others):
        first = cancel_via_api(student_client, mine["registration_id"], key)
    assert first.status_code == 200, first.content
    again = cancel_via_api(student_client, mine["registration_id"], key)
    assert again.status_code == 200 and again.content == first.content
    assert again["Idempotent-Replayed"] == "true"


def test_page_cancel_answer_lost_then_resubmitted_is_cancelled_once(ddb, student_client):
    event = make_event(capacity=2)
    mine = register_via_api(student_client, event.event_id, new_key()).json()
    key = new_key()
    url = f"/registrations/{mine['registration_id']}/cancel/"
    with inject(Fault(LOST, final_attempt_too=True)), pytest.raises(Exception):  # noqa: B017 - any transport error
        student_client.post(url, {"idempotency_key": key}, HTTP_HX_REQUEST="true")
    again = student_client.post(url, {"idempotency_key": key}, HTTP_HX_REQUEST="true")
    assert again.status_code == 200 and "cancelled" in again.content.decode().lower()
    assert again["Idempotent-Replayed"] == "true"
    assert event_seat_counts(event.event_id).registered == 0


def test_check_invariants_reports_people_waiting_while_seats_are_free(ddb):
    from registrations.events.models import EventSeats
    from tems.invariants import check_all

    event = make_event(capacity=1)
    for user in ("ann", "bob"):
        register(event.event_id, user)
    # What the old edit left behind when its promotion never ran: capacity raised, nobody moved up.
    EventSeats(*EventSeats.key_for(event.event_id)).update(actions=[EventSeats.capacity.set(2)])
    assert check_all()["nobody waits while a seat is free"] == [
        f"EVENT#{event.event_id}: 1 waiting while 1 seat(s) free"]


def test_api_cancel_with_promotion_is_three_requests_with_its_record_inside(ddb, student_client, other_student):
    from tems.metering import metered

    event = make_event(capacity=1)
    mine = register_via_api(student_client, event.event_id, new_key()).json()
    other = Client()
    other.force_login(other_student)
    register_via_api(other, event.event_id, new_key())
    with metered() as meter:
        response = cancel_via_api(student_client, mine["registration_id"], new_key())
    assert response.status_code == 200
    # Read the registration, the event and its lanes, the head of the lane with someone waiting, then ONE
    # transaction: cancel, promote, idempotency record.
    assert dict(meter.requests) == {"GetItem": 2, "BatchGetItem": 1, "Query": 1, "TransactWriteItems": 1}


def test_an_error_botocore_gave_up_on_is_retried_by_the_registration(ddb, monkeypatch):
    # botocore's retry quota is shared by a client: when many requests fail at once it stops retrying, and an
    # InternalServerError (or a timeout) reaches the service. Every round is conditioned, so it tries again.
    from botocore.exceptions import ClientError
    from pynamodb.exceptions import TransactWriteError

    from tems.transactions import LabelledTransaction

    event = make_event(capacity=1)
    original, failed = LabelledTransaction.commit, []

    def commit(self):
        if not failed:
            failed.append(True)
            original(self)  # applied, and then the answer is an error: the outcome is unknown to the service
            raise TransactWriteError("Failed to write transaction items", ClientError(
                {"Error": {"Code": "InternalServerError", "Message": "injected"}}, "TransactWriteItems"))
        return original(self)

    monkeypatch.setattr(LabelledTransaction, "commit", commit)
    outcome = register(event.event_id, "ann")
    # The retry met its own first round: the stored answer, byte for byte.
    assert outcome.kind == "replayed" and outcome.response.status == 201
    assert selectors.claim_get(event_id=event.event_id, user_id="ann") is not None
    assert_invariants_clean()
