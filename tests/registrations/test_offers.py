"""Waitlist offers (registrations.offers.services) on DynamoDB Local: a freed seat offered to the head, held
until the offer ends, accepted once, passed on by a decline, an expiry or a cancel after the accept.

Each promise is also run against a deliberately broken variant of the write that keeps it, and seen to fail.
The clock is passed in: no test sleeps on the wall clock.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta
from unittest import mock

import pytest

from registrations import selectors, services
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.messages import services as messages
from registrations.models import CONFIRMED, OFFERED, WAITLISTED, Registration, RegistrationClaim
from registrations.offers import offer_writes
from registrations.offers import services as offer_services
from registrations.offers import services as offers
from registrations.offers.models import Offer
from registrations.seating.hints import hints
from registrations.seating.models import SeatShard
from registrations.services import cancel as cancel_service
from registrations.services import promotion as promotion_service
from tems.clock import utcnow
from tems.outbox import OutboxMessage, outbox_relay
from tests.helpers import assert_invariants_clean, broken_invariants
from tests.race import race
from tests.registrations.helpers import STARTS, make_event, register
from tests.support.faults import CONFLICT, LOST, Fault, inject

NOW = STARTS - timedelta(days=10)
WINDOW = timedelta(hours=24)


def new_key() -> str:
    return str(uuid.uuid4())


def full_event_with_queue(waiting: int, **overrides) -> tuple[str, str, list[str]]:
    """A one-seat event in offer mode: its seat taken by "holder", ``waiting`` students behind, in order."""
    event = make_event(capacity=1, offer_hours=24, **overrides)
    holder = register(event.event_id, "holder").data["registration_id"]
    queue = [register(event.event_id, f"w{n}").data["registration_id"] for n in range(waiting)]
    return event.event_id, holder, queue


def status_of(user_id: str, registration_id: str) -> str | None:
    try:
        return Registration.get(*Registration.user_key_for(user_id, registration_id), consistent_read=True).status
    except Registration.DoesNotExist:
        return None


def offer_of(user_id: str, registration_id: str) -> Offer:
    return Offer.get(*Offer.key_for(user_id, registration_id), consistent_read=True)


def accept(user_id: str, registration_id: str, *, now=NOW, key: str | None = None):
    return offer_services.offer_accept(user_id=user_id, registration_id=registration_id,
                                       idempotency_key=key or new_key(),
                                       fingerprint=f"accept:{registration_id}", now=now, sleep=lambda _: None)


def decline(user_id: str, registration_id: str, *, now=NOW, key: str | None = None):
    return offer_services.offer_decline(user_id=user_id, registration_id=registration_id,
                                  idempotency_key=key or new_key(), fingerprint=f"decline:{registration_id}",
                                  now=now, sleep=lambda _: None)


def cancel(user_id: str, registration_id: str, *, now=NOW) -> None:
    services.registration_cancel(user_id=user_id, registration_id=registration_id, now=now, sleep=lambda _: None)


def all_offers() -> list[Offer]:
    return list(Offer.scan(filter_condition=Offer.entity == "Offer"))


def promoted_mails(registration_id: str) -> int:
    return sum(1 for message in OutboxMessage.scan()
               if message.message_type == "RegistrationPromoted" and message.data["registration_id"] == registration_id)


def test_a_freed_seat_is_offered_to_the_head_and_stays_taken(ddb):
    event_id, holder, queue = full_event_with_queue(2)
    cancel("holder", holder)
    assert status_of("w0", queue[0]) == OFFERED and status_of("w1", queue[1]) == WAITLISTED
    offer = offer_of("w0", queue[0])
    assert offer.state == OFFERED and offer.ends_at == NOW + WINDOW
    assert int(SeatShard.get(*SeatShard.key_for(event_id, int(offer.shard))).taken) == 1
    assert [m.data["user"] for m in OutboxMessage.scan() if m.message_type == "SeatOffered"] == ["w0"]
    assert_invariants_clean()


def test_automatic_events_promote_as_before(ddb):
    event = make_event(capacity=1)
    holder = register(event.event_id, "holder").data["registration_id"]
    waiting = register(event.event_id, "w0").data["registration_id"]
    cancel("holder", holder)
    assert status_of("w0", waiting) == CONFIRMED
    assert all_offers() == []


def _accept_without_conditions(offer, *, now):
    """Broken: the accept as a read-then-write, its conditions dropped (the offer read as offered decides)."""
    transaction = offers.LabelledTransaction()
    transaction.update(offers.OFFER, Offer(*Offer.key_for(offer.user_id, offer.registration_id)),
                       actions=[Offer.state.set(Offer.ACCEPTED)])
    for label, key in ((offers.USER_REGISTRATION, Registration.user_key_for(offer.user_id, offer.registration_id)),
                       (offers.EVENT_REGISTRATION, Registration.event_key_for(offer.event_id, offer.registration_id))):
        transaction.update(label, Registration(*key), actions=[Registration.status.set(CONFIRMED)])
    transaction.save(offers.OUTBOX, offers.outbox_message(message_type="RegistrationPromoted", now=now, payload={
        "registration_id": offer.registration_id, "event_id": offer.event_id, "user": offer.user_id}))
    return transaction


@pytest.mark.parametrize("broken", [False, True], ids=["service", "broken"])
def test_fifty_concurrent_accepts_make_one_registration(ddb, monkeypatch, broken):
    event_id, holder, queue = full_event_with_queue(1)
    cancel("holder", holder)
    if broken:
        monkeypatch.setattr(offers, "_accept_transaction", _accept_without_conditions)
    answers = race([lambda: accept("w0", queue[0]) for _ in range(50)])
    if broken:
        assert promoted_mails(queue[0]) > 1  # the race really ran: without the conditions it double-applies
        return
    assert promoted_mails(queue[0]) == 1
    assert {answer.response.body for answer in answers} == {answers[0].response.body}
    assert answers[0].data["status"] == CONFIRMED
    assert status_of("w0", queue[0]) == CONFIRMED and offer_of("w0", queue[0]).state == Offer.ACCEPTED
    assert_invariants_clean()


def test_an_accept_is_replayed_per_key(ddb):
    _, holder, queue = full_event_with_queue(1)
    cancel("holder", holder)
    key = new_key()
    first, again = accept("w0", queue[0], key=key), accept("w0", queue[0], key=key)
    assert again.replayed and again.response.body == first.response.body


def _end_without_the_clock(transaction, *, user_id, registration_id, state, now):
    """Broken: the offer's end conditioned on its state only, not on the clock."""
    transaction.update(offer_writes.OFFER, Offer(*Offer.key_for(user_id, registration_id)),
                       actions=[Offer.state.set(state), Offer.gsi1pk.remove(), Offer.gsi1sk.remove()],
                       condition=Offer.state == OFFERED, return_old_on_failure=True)


@pytest.mark.parametrize("broken", [False, True], ids=["service", "broken"])
def test_a_late_accept_is_409_and_the_seat_goes_to_the_next(ddb, monkeypatch, broken):
    _, holder, queue = full_event_with_queue(2)
    cancel("holder", holder)
    if broken:
        monkeypatch.setattr(offers, "add_offer_end", _end_without_the_clock)
    late = NOW + WINDOW + timedelta(seconds=1)
    if broken:
        accept("w0", queue[0], now=late)  # accepted past its end: the promise is broken
        assert status_of("w0", queue[0]) == CONFIRMED
        return
    with pytest.raises(RegistrationError) as refused:
        accept("w0", queue[0], now=late)
    assert refused.value.code == "offer_expired" and refused.value.status == 409
    assert status_of("w0", queue[0]) is None and offer_of("w0", queue[0]).state == Offer.EXPIRED
    assert status_of("w1", queue[1]) == OFFERED
    assert offer_of("w1", queue[1]).ends_at == late + WINDOW
    assert_invariants_clean()


def _decline_keeping_the_seat(offer, *, state, now, response, key=None):
    """Broken: the decline ends the offer and the registration, and nobody gets the seat it held."""
    transaction = offers.LabelledTransaction()
    offer_writes.add_offer_end(transaction, user_id=offer.user_id, registration_id=offer.registration_id,
                                    state=state, now=now)
    transaction.delete(offers.CLAIM, RegistrationClaim(*RegistrationClaim.key_for(offer.event_id, offer.user_id)))
    for label, key_of in ((offers.USER_REGISTRATION, Registration.user_key_for(offer.user_id, offer.registration_id)),
                          (offers.EVENT_REGISTRATION, Registration.event_key_for(offer.event_id,
                                                                                 offer.registration_id))):
        transaction.delete(label, Registration(*key_of))
    transaction.commit()
    return offers.StoredOutcome(response)


@pytest.mark.parametrize("broken", [False, True], ids=["service", "broken"])
def test_a_decline_offers_the_seat_to_the_next_at_once(ddb, monkeypatch, broken):
    _, holder, queue = full_event_with_queue(2)
    cancel("holder", holder)
    if broken:
        monkeypatch.setattr(offers, "_pass_on", _decline_keeping_the_seat)
    answer = decline("w0", queue[0])
    assert answer.data["state"] == Offer.DECLINED
    assert status_of("w0", queue[0]) is None
    if broken:
        assert status_of("w1", queue[1]) == WAITLISTED
        return
    assert status_of("w1", queue[1]) == OFFERED
    assert decline("w0", queue[0]).data["state"] == Offer.DECLINED  # a second tap: the same end, no second pass
    assert status_of("w1", queue[1]) == OFFERED
    assert_invariants_clean()


def test_the_last_decline_frees_the_seat_for_newcomers(ddb):
    event_id, holder, queue = full_event_with_queue(1)
    cancel("holder", holder)
    decline("w0", queue[0])
    assert register(event_id, "newcomer").data["status"] == CONFIRMED
    assert_invariants_clean()


@pytest.mark.parametrize("broken", [False, True], ids=["service", "broken"])
def test_an_offer_never_outlives_the_start(ddb, monkeypatch, broken):
    if broken:
        monkeypatch.setattr(cancel_service, "offer_end_for",
                            lambda seats, *, now: now + timedelta(hours=int(seats.offer_hours)))
    soon = make_event(capacity=1, offer_hours=24, starts_at=NOW + timedelta(hours=10))
    holder = register(soon.event_id, "holder").data["registration_id"]
    waiting = register(soon.event_id, "w0").data["registration_id"]
    cancel("holder", holder)
    offered = [offer for offer in all_offers() if offer.state == OFFERED]
    if broken:
        assert offered and offered[0].ends_at > soon.starts_at
        return
    # Starting sooner than the window: the head gets the seat at once, no offer.
    assert status_of("w0", waiting) == CONFIRMED and offered == []
    later = make_event(capacity=1, offer_hours=24, starts_at=NOW + timedelta(hours=30))
    holder = register(later.event_id, "holder").data["registration_id"]
    waiting = register(later.event_id, "w1").data["registration_id"]
    cancel("holder", holder)
    assert offer_of("w1", waiting).ends_at <= later.starts_at
    assert_invariants_clean()


@pytest.mark.parametrize("broken", [False, True], ids=["service", "broken"])
def test_a_capacity_raise_in_offer_mode_offers_the_new_seats(ddb, monkeypatch, broken):
    if broken:  # the raise as before offers: every raised seat given to a head outright
        monkeypatch.setattr(promotion_service, "offer_end_for", lambda seats, *, now: None)
    event_id, _, queue = full_event_with_queue(3)
    current = selectors.event_get(event_id=event_id)
    update = event_services.event_update(event_id=event_id, expected_version=int(current.version), title=current.title,
                                   description="", location="", starts_at=STARTS, capacity=3, updated_by="staff")
    assert update.promoted == 2
    statuses = [status_of(f"w{n}", registration_id) for n, registration_id in enumerate(queue)]
    if broken:
        assert statuses[:2] == [CONFIRMED, CONFIRMED] and all_offers() == []
        return
    assert statuses == [OFFERED, OFFERED, WAITLISTED]
    assert sorted(offer.user_id for offer in all_offers()) == ["w0", "w1"]
    assert sorted(m.data["user"] for m in OutboxMessage.scan() if m.message_type == "SeatOffered") == ["w0", "w1"]
    # A raised seat declined passes on like a freed one: to the next in line.
    decline("w0", queue[0], now=utcnow())
    assert status_of("w2", queue[2]) == OFFERED
    assert_invariants_clean()


@pytest.mark.parametrize("broken", [False, True], ids=["service", "broken"])
def test_a_start_moved_before_an_offers_end_ends_it_there(ddb, monkeypatch, broken):
    if broken:  # the accept checking the cancellation only, as before
        monkeypatch.setattr(offers, "still_admits", lambda now: offers.EventSeats.cancelled_at.does_not_exist())
    event_id, holder, queue = full_event_with_queue(1)
    cancel("holder", holder)
    offered_until = offer_of("w0", queue[0]).ends_at
    current = selectors.event_get(event_id=event_id)
    moved = NOW + timedelta(hours=2)
    event_services.event_update(event_id=event_id, expected_version=int(current.version), title=current.title,
                          description="", location="", starts_at=moved, capacity=1, updated_by="staff")
    assert moved < offered_until
    row, = selectors.registration_list(user_id="w0")
    assert row["offer"]["ends_at"] == moved.isoformat()  # what the student reads is the new start
    after_start = NOW + timedelta(hours=3)
    if broken:
        assert accept("w0", queue[0], now=after_start).data["status"] == CONFIRMED  # admitted after the start
        return
    with pytest.raises(RegistrationError) as refused:
        accept("w0", queue[0], now=after_start)
    assert refused.value.code == "offer_expired" and "started" in refused.value.detail
    assert status_of("w0", queue[0]) == OFFERED
    assert accept("w0", queue[0], now=NOW + timedelta(hours=1)).data["status"] == CONFIRMED  # before it: taken


@pytest.mark.parametrize("broken", [False, True], ids=["service", "broken"])
def test_a_cancel_after_the_accept_offers_the_seat_again(ddb, monkeypatch, broken):
    _, holder, queue = full_event_with_queue(2)
    cancel("holder", holder)
    accept("w0", queue[0])
    if broken:
        # The cancel that forgets the event's offer mode: the next in line is promoted without being asked.
        monkeypatch.setattr(cancel_service, "add_to_head", lambda transaction, head, *, now, shard, offer_ends_at:
                            promotion_service.add_promotion(transaction, head, now=now, shard=shard))
    cancel("w0", queue[0], now=NOW + timedelta(hours=1))
    if broken:
        assert status_of("w1", queue[1]) == CONFIRMED
        return
    assert status_of("w1", queue[1]) == OFFERED
    assert_invariants_clean()


def two_seats_and_a_queue(waiting: int) -> tuple[dict[str, str], list[str]]:
    """A two-seat event in offer mode, seated by "a" and "b", ``waiting`` students behind: (seated, queue)."""
    event = make_event(capacity=2, offer_hours=24)
    seated = {user: register(event.event_id, user).data["registration_id"] for user in ("a", "b")}
    return seated, [register(event.event_id, f"w{n}").data["registration_id"] for n in range(waiting)]


def test_a_cancel_whose_head_was_taken_first_offers_the_next_without_reading_again(ddb, monkeypatch,
                                                                                     dynamodb_calls):
    seated, queue = two_seats_and_a_queue(3)
    read_freed_seat = cancel_service.freed_seat

    def overtaken(registration, *, now):
        # "a" has read w0 as the head when "b"'s cancel commits, giving w0 the seat it freed first.
        freed = read_freed_seat(registration, now=now)
        if registration.user_id == "a" and not dynamodb_calls.count("overtaken"):
            cancel("b", seated["b"])
            dynamodb_calls.append("overtaken")
        return freed

    monkeypatch.setattr(cancel_service, "freed_seat", overtaken)
    cancel("a", seated["a"])
    after = dynamodb_calls[dynamodb_calls.index("overtaken") + 1:]
    assert [status_of(f"w{n}", queue[n]) for n in range(3)] == [OFFERED, OFFERED, WAITLISTED]
    assert after == ["TransactWriteItems", "TransactWriteItems"], after  # refused (w0 gone), then w1's
    assert_invariants_clean()


@pytest.mark.parametrize("broken", [False, True], ids=["service", "broken"])
def test_a_conflict_on_the_head_does_not_pass_it_over(ddb, monkeypatch, broken):
    seated, queue = two_seats_and_a_queue(2)
    if broken:
        # Passing the seat on after any refusal: a conflict says nothing about whether the head left.
        monkeypatch.setattr(cancel_service.FreedSeat, "passed_on", lambda self, cancelled: replace(
            self, head=self.behind[0], behind=self.behind[1:]) if self.behind else None)
    with inject(Fault(CONFLICT, operations={"TransactWriteItems"}, times=1)) as faults:
        cancel("a", seated["a"])
    assert faults.fired(CONFLICT)
    if broken:
        assert [status_of(f"w{n}", queue[n]) for n in range(2)] == [WAITLISTED, OFFERED]
        return
    assert [status_of(f"w{n}", queue[n]) for n in range(2)] == [OFFERED, WAITLISTED]
    assert_invariants_clean()


@pytest.mark.parametrize("broken", [False, True], ids=["service", "broken"])
def test_a_warm_process_reads_only_the_lanes_that_can_hold_the_head(ddb, settings, monkeypatch, dynamodb_calls,
                                                                    broken):
    settings.SEATS_PER_SHARD = 2
    event = make_event(capacity=8, offer_hours=24)
    hints.remember_shards(event.event_id, 4)
    seated = {f"s{n}": register(event.event_id, f"s{n}").data["registration_id"] for n in range(8)}
    for n in range(24):  # more than a cancel reads (HEADS_READ) in all, so a lane can be skipped
        register(event.event_id, f"w{n:02d}")
    entries = selectors.waitlist_entries(event_id=event.event_id)  # ticket order
    in_line, lanes = [entry.user_id for entry in entries], {entry.lane for entry in entries}
    assert len(lanes) > 1  # the line is spread over lanes, so there are lanes to skip
    cancel("s0", seated["s0"])  # a cold process: every lane with someone waiting is read, and its floor kept
    if broken:
        # A floor that is not a floor: the lane holding the next in line claims to start above everyone.
        head = selectors.waitlist_entries(event_id=event.event_id)[0]
        hints.raise_lane_floor(event.event_id, int(head.lane), 10**9)
    dynamodb_calls.clear()
    cancel("s1", seated["s1"])
    queries = dynamodb_calls.count("Query")
    offered = sorted(user for user in in_line if selectors.registration_list(user_id=user)[0]["status"] == OFFERED)
    if broken:
        assert offered != sorted(in_line[:2])  # someone behind was offered the seat ahead of the head
        return
    assert queries < len(lanes), dynamodb_calls
    assert offered == sorted(in_line[:2])
    assert_invariants_clean()


def test_the_sweep_hands_each_expired_offer_on_exactly_once(ddb):
    _, holder, queue = full_event_with_queue(3)
    cancel("holder", holder)
    assert offer_services.offers_sweep(now=NOW + WINDOW - timedelta(seconds=1)) == 0  # not ended yet
    after = NOW + WINDOW
    assert race([lambda: offer_services.offers_sweep(now=after) for _ in range(4)]).count(1) == 1
    assert status_of("w0", queue[0]) is None and status_of("w1", queue[1]) == OFFERED
    assert offer_services.offers_sweep(now=after) == 0
    assert status_of("w2", queue[2]) == WAITLISTED
    assert_invariants_clean()


def offered_mails(user_id: str) -> int:
    return sum(1 for message in OutboxMessage.scan()
               if message.message_type == "SeatOffered" and message.data["user"] == user_id)


def test_an_expiry_whose_answer_is_lost_hands_the_seat_on_once(ddb):
    _, holder, queue = full_event_with_queue(3)
    cancel("holder", holder)
    after = NOW + WINDOW
    # The expiry applies and its answer never comes back (the relay dies, as far as it can tell): the next sweep,
    # and this one's own re-read, find the offer ended and hand nothing on a second time.
    with inject(Fault(LOST, operations={"TransactWriteItems"}, final_attempt_too=True)) as faults:
        offer_services.offers_sweep(now=after)
    assert faults.fired(LOST)
    assert offer_services.offers_sweep(now=after) == 0
    assert status_of("w0", queue[0]) is None and offer_of("w0", queue[0]).state == Offer.EXPIRED
    assert status_of("w1", queue[1]) == OFFERED and offered_mails("w1") == 1
    assert status_of("w2", queue[2]) == WAITLISTED
    assert_invariants_clean()


def test_an_unswept_expired_offer_breaks_the_invariant(ddb):
    _, holder, queue = full_event_with_queue(1)
    cancel("holder", holder, now=STARTS - timedelta(days=400))
    check = "every offer holds its seat, one offer per seat, and every expired offer is handed on"
    assert any("not handed on" in problem for problem in broken_invariants().get(check, []))
    assert offer_services.offers_sweep() == 1
    assert check not in broken_invariants()


def test_the_accept_and_the_expiry_carry_the_clock_in_their_conditions():
    offer = Offer(*Offer.key_for("u1", "r1"), registration_id="r1", event_id="e1", user_id="u1", state=OFFERED,
                  shard=0, offered_at=NOW, ends_at=NOW + WINDOW)
    items = offers._accept_transaction(offer, now=NOW).transact_items()
    ended = next(item["Update"] for item in items
                 if item.get("Update", {}).get("Key", {}).get("SK") == {"S": "OFFER#r1"})
    assert ended["ConditionExpression"] == "(#0 = :0 AND #1 > :1)"
    assert [ended["ExpressionAttributeNames"][name] for name in ("#0", "#1")] == ["state", "ends_at"]
    assert ended["ExpressionAttributeValues"][":1"] == {"S": Offer.ends_at.serialize(NOW)}
    transaction = offers.LabelledTransaction()
    offer_writes.add_offer_end(transaction, user_id="u1", registration_id="r1", state=Offer.EXPIRED, now=NOW)
    (expiry,) = [item["Update"] for item in transaction.transact_items()]
    assert expiry["ConditionExpression"] == "(#0 = :0 AND #1 <= :1)"


def test_an_accept_and_an_expiry_at_once_end_the_offer_once(ddb):
    _, holder, queue = full_event_with_queue(2)
    cancel("holder", holder)
    ends = NOW + WINDOW
    results = race([lambda: accept("w0", queue[0], now=ends - timedelta(seconds=1)),
                    lambda: offer_services.offer_expire(user_id="w0", registration_id=queue[0], now=ends)])
    state = offer_of("w0", queue[0]).state
    if state == Offer.ACCEPTED:
        assert results[1] is False and status_of("w0", queue[0]) == CONFIRMED
        assert status_of("w1", queue[1]) == WAITLISTED
    else:
        assert state == Offer.EXPIRED and results[1] is True
        assert status_of("w0", queue[0]) is None and status_of("w1", queue[1]) == OFFERED
    assert_invariants_clean()


def test_an_expiry_that_read_the_offer_just_before_its_accept_hands_nothing_on(ddb, monkeypatch):
    """The race above in one order, made to happen every run: the expiry reads the offer still open, the accept
    lands, and the registration the expiry reads next is confirmed, so it reads the offer again and stops."""
    _, holder, queue = full_event_with_queue(2)
    cancel("holder", holder)
    ends = NOW + WINDOW
    stale = [offer_of("w0", queue[0])]
    accept("w0", queue[0], now=ends - timedelta(seconds=1))
    fresh = offers._offer_get
    monkeypatch.setattr(offers, "_offer_get", lambda **key: stale.pop() if stale else fresh(**key))
    assert offer_services.offer_expire(user_id="w0", registration_id=queue[0], now=ends, sleep=lambda _: None) is False
    assert offer_of("w0", queue[0]).state == Offer.ACCEPTED and status_of("w0", queue[0]) == CONFIRMED
    assert status_of("w1", queue[1]) == WAITLISTED
    assert_invariants_clean()


def cancel_event(event_id: str) -> None:
    event_services.event_cancel_once(event_id=event_id, user_id="staff", cancelled_by="staff",
                                     idempotency_key=new_key(), fingerprint=f"cancel-event:{event_id}")


_ACCEPT = offers._accept_transaction


def _accept_ignoring_the_cancellation(offer, *, now):
    """Broken, deliberately: the accept without its check that the event was not cancelled."""
    with mock.patch.object(offers.LabelledTransaction, "condition_check", return_value=None):
        return _ACCEPT(offer, now=now)


def test_an_open_offer_of_a_cancelled_event_admits_nobody_and_is_called_off(ddb):
    event_id, holder, queue = full_event_with_queue(2)
    cancel("holder", holder)
    assert status_of("w0", queue[0]) == OFFERED
    cancel_event(event_id)
    for answer in (accept, decline):
        with pytest.raises(RegistrationError) as refused:
            answer("w0", queue[0])
        assert refused.value.code == "conflict" and refused.value.extra["reason"] == "event_cancelled"
    assert offers.offers_sweep(now=NOW + 2 * WINDOW) == 1
    assert offer_of("w0", queue[0]).state == Offer.CALLED_OFF
    assert offers.offers_sweep(now=NOW + 2 * WINDOW) == 0  # out of the sweep's index: never handed on
    # It stands as it was, like every registration of the cancelled event, and is told of the cancellation.
    assert status_of("w0", queue[0]) == OFFERED and status_of("w1", queue[1]) == WAITLISTED
    assert_invariants_clean()
    outbox_relay(handlers={event_services.CANCELLATION_REQUESTED: messages.message_fan_out,
                           messages.FAN_OUT_CONTINUED: messages.message_fan_out})
    told = sorted(m.data["registration_id"] for m in OutboxMessage.scan() if m.message_type == messages.MESSAGE_MAIL)
    assert told == sorted(queue)


def test_an_accept_that_ignores_the_cancellation_is_caught(ddb, monkeypatch):
    monkeypatch.setattr(offers, "_accept_transaction", _accept_ignoring_the_cancellation)
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):  # the accept went through
        test_an_open_offer_of_a_cancelled_event_admits_nobody_and_is_called_off(ddb)
