"""Event cancellation on DynamoDB Local: one transaction marks the event and its shards and queues one notice;
every write that admits, promotes, edits or checks in refuses the cancelled event by its own condition."""

from __future__ import annotations

from datetime import timedelta

import pytest

from registrations import selectors, services
from registrations.checkins import services as checkin_services
from registrations.errors import EVENT_CANCELLED, RegistrationError
from registrations.events import services as event_services
from registrations.messages.models import EventMessage
from registrations.seating.models import SeatShard
from registrations.ticket_tokens import ticket_token
from tems.clock import utcnow
from tems.invariants import check_all
from tems.outbox import OutboxMessage
from tests.registrations.helpers import make_event, new_key, register
from tests.support.faults import ERROR, LOST, Fault, inject

STAFF = "staff-key"


def cancel(event_id: str, key: str | None = None, *, user_id: str = STAFF):
    return event_services.event_cancel_once(event_id=event_id, user_id=user_id, cancelled_by="organiser",
                                      idempotency_key=key or new_key(), fingerprint=f"fp-cancel-{event_id}")


def outbox_of(event_id: str, message_type: str) -> list[OutboxMessage]:
    return [message for message in OutboxMessage.scan()
            if message.message_type == message_type and message.data.get("event_id") == event_id]


def assert_refused_as_cancelled(call) -> None:
    with pytest.raises(RegistrationError) as refused:
        call()
    assert refused.value.code == "conflict" and refused.value.extra["reason"] == EVENT_CANCELLED


@pytest.fixture
def event(ddb):
    return make_event(capacity=3, starts_at=utcnow() + timedelta(days=3))


def test_the_cancellation_marks_the_event_and_every_shard_and_writes_one_notice(ddb):
    event = make_event(capacity=400, starts_at=utcnow() + timedelta(days=3))  # several shards
    outcome = cancel(event.event_id)
    assert outcome.response.status == 200 and outcome.data["status"] == "cancelled"
    stored = selectors.event_get(event_id=event.event_id)
    assert stored.is_cancelled and stored.cancelled_by == "organiser"
    shards = [SeatShard.get(*SeatShard.key_for(event.event_id, k)) for k in range(int(stored.seat_shards))]
    assert len(shards) > 1 and all(shard.cancelled_at == stored.cancelled_at for shard in shards)
    [notice] = selectors.message_list(event_id=event.event_id)
    assert notice.kind == EventMessage.CANCELLATION and notice.message_id == EventMessage.cancellation_id_for(
        event.event_id)
    assert len(outbox_of(event.event_id, event_services.CANCELLATION_REQUESTED)) == 1
    assert {name: found for name, found in check_all().items() if found} == {}


def test_repeating_it_with_the_same_or_a_new_key_writes_nothing_more(event):
    key = new_key()
    first = cancel(event.event_id, key)
    again = cancel(event.event_id, key)
    assert again.replayed and again.response.body == first.response.body
    other = cancel(event.event_id, user_id="other-staff")
    assert other.response.status == 200 and other.data["cancelled_at"] == first.data["cancelled_at"]
    assert len(outbox_of(event.event_id, event_services.CANCELLATION_REQUESTED)) == 1
    assert len(selectors.message_list(event_id=event.event_id).items) == 1


def test_registration_and_the_waiting_list_refuse_a_cancelled_event(event):
    for n in range(3):
        register(event.event_id, f"s{n}")
    cancel(event.event_id)
    assert_refused_as_cancelled(lambda: register(event.event_id, "late"))  # would have joined the waiting list
    open_event = make_event(capacity=5, starts_at=utcnow() + timedelta(days=3))
    cancel(open_event.event_id)
    assert_refused_as_cancelled(lambda: register(open_event.event_id, "late"))  # a free seat, refused too
    assert selectors.claim_get(event_id=open_event.event_id, user_id="late") is None


def test_a_process_that_remembers_the_event_full_is_refused_too(event):
    """The router skips the seat attempt when its hints say the event is full: the lane's read explains then."""
    for n in range(4):
        register(event.event_id, f"s{n}")  # the fourth waits: this process now remembers the event full
    cancel(event.event_id)
    assert_refused_as_cancelled(lambda: register(event.event_id, "late"))


def test_nobody_is_promoted_and_nobody_leaves_once_the_event_is_cancelled(event):
    confirmed = register(event.event_id, "s0").data
    for n in range(1, 4):
        register(event.event_id, f"s{n}")  # s3 waits
    cancel(event.event_id)
    assert_refused_as_cancelled(lambda: services.registration_cancel(user_id="s0",
                                                                     registration_id=confirmed["registration_id"]))
    assert services.waitlist_promote(event_id=event.event_id) == 0
    claim = selectors.claim_get(event_id=event.event_id, user_id="s3")
    assert claim.status == "waitlisted"
    current = selectors.event_get(event_id=event.event_id)
    assert_refused_as_cancelled(lambda: event_services.event_update(
        event_id=event.event_id, expected_version=int(current.version), title="Raised", description="",
        location="", starts_at=current.starts_at, capacity=10, updated_by="staff"))
    assert selectors.event_get(event_id=event.event_id).capacity == 3
    assert {name: found for name, found in check_all().items() if found} == {}


def promotion_meeting_a_cancellation(event_id: str, monkeypatch) -> int:
    """A raise of capacity left for the promotion (people wait), and the event cancelled between the promotion's
    read of the heads and its write: returns how many the promotion promoted."""
    from registrations.events.models import EventSeats
    from registrations.services import promotion

    for n in range(4):
        register(event_id, f"s{n}")  # s3 waits
    EventSeats(*EventSeats.key_for(event_id)).update(actions=[EventSeats.capacity.set(4)])  # a raise, unsliced
    real_heads = selectors.waitlist_heads

    def heads_then_cancelled(**kwargs):
        heads = real_heads(**kwargs)
        if not heads_then_cancelled.done:
            heads_then_cancelled.done = True
            cancel(event_id)
        return heads

    heads_then_cancelled.done = False
    monkeypatch.setattr(promotion.selectors, "waitlist_heads", heads_then_cancelled)
    return services.waitlist_promote(event_id=event_id)


def test_a_promotion_read_before_the_cancellation_promotes_nobody_after_it(event, monkeypatch):
    assert promotion_meeting_a_cancellation(event.event_id, monkeypatch) == 0
    assert selectors.claim_get(event_id=event.event_id, user_id="s3").status == "waitlisted"


def test_the_promotion_check_catches_a_promotion_without_the_cancelled_condition(event, monkeypatch):
    from registrations.events.models import EventSeats

    # Broken: the promotion's "not cancelled" is a condition that always holds.
    monkeypatch.setattr(EventSeats.cancelled_at, "does_not_exist", lambda: EventSeats.pk.exists())
    assert promotion_meeting_a_cancellation(event.event_id, monkeypatch) == 1
    assert selectors.claim_get(event_id=event.event_id, user_id="s3").status == "confirmed"


def test_the_door_refuses_the_tickets_of_a_cancelled_event(event):
    data = register(event.event_id, "s0").data
    cancel(event.event_id)
    ticket = ticket_token(event_id=event.event_id, registration_id=data["registration_id"], user_id="s0")
    assert_refused_as_cancelled(lambda: checkin_services.checkin_create(
        event_id=event.event_id, ticket_text=ticket, door="A", staff_id=STAFF, idempotency_key=new_key(),
        fingerprint="fp-door"))
    assert int(selectors.event_get(event_id=event.event_id).checked_in_count or 0) == 0


def test_an_unknown_event_is_404_and_writes_nothing(ddb):
    with pytest.raises(RegistrationError) as refused:
        cancel("nosuchevent")
    assert refused.value.code == "not_found"


def test_a_key_reused_for_another_request_is_refused(event):
    key = new_key()
    cancel(event.event_id, key)
    with pytest.raises(RegistrationError) as refused:
        event_services.event_cancel_once(event_id=event.event_id, user_id=STAFF, cancelled_by="organiser",
                                   idempotency_key=key, fingerprint="another-request")
    assert refused.value.code == "unprocessable"


def registration_meeting_a_cancellation(event_id: str, monkeypatch):
    """A registration whose round was built before the event was cancelled and is sent after it."""
    from registrations.services import create

    original = create.confirm_transaction

    def cancelled_meanwhile(attempt, shard):
        built = original(attempt, shard)
        if not cancelled_meanwhile.done:
            cancelled_meanwhile.done = True
            cancel(event_id)
        return built

    cancelled_meanwhile.done = False
    monkeypatch.setattr(create, "confirm_transaction", cancelled_meanwhile)
    return register(event_id, "racer")


def test_a_registration_in_flight_is_either_before_the_cancellation_or_refused(event, monkeypatch):
    """The seat's condition and the cancellation's mark are on the same shard item: whichever commits second
    sees the other. A registration planned before the cancellation and sent after it is refused."""
    assert_refused_as_cancelled(lambda: registration_meeting_a_cancellation(event.event_id, monkeypatch))
    assert selectors.claim_get(event_id=event.event_id, user_id="racer") is None


def test_the_in_flight_check_catches_a_seat_condition_that_ignores_the_mark(event, monkeypatch):
    from registrations.seating import shards

    # Broken: the seat's condition as it was before the cancellation existed.
    monkeypatch.setattr(shards, "admitting", lambda created_at: SeatShard.starts_at > created_at)
    assert registration_meeting_a_cancellation(event.event_id, monkeypatch).kind == "created"
    assert selectors.claim_get(event_id=event.event_id, user_id="racer") is not None


@pytest.mark.parametrize("kind", [LOST, ERROR])
def test_a_lost_answer_or_a_failed_try_cancels_once_and_answers_the_first_answer(event, kind):
    """The cancellation's transaction applied but its answer lost (botocore retries, or the service's next round
    does): the record replays it; a 500 after botocore's retries: the next round writes it. One notice either way."""
    with inject(Fault(kind, operations={"TransactWriteItems"}, times=1 if kind == LOST else 4)) as faults:
        outcome = cancel(event.event_id)
    assert faults.fired(kind) and outcome.response.status == 200
    assert selectors.event_get(event_id=event.event_id).is_cancelled
    assert len(outbox_of(event.event_id, event_services.CANCELLATION_REQUESTED)) == 1
    assert {name: found for name, found in check_all().items() if found} == {}
