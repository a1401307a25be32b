"""Events with more seat shards than lanes: the shards past the lanes hold seats only, and every write that
touches every shard reaches them in groups (registrations.seating.marks, .holds). Small numbers here (4 lanes,
10 shards, groups of 4) walk the same paths as 78 lanes, 200 shards and groups of 90; one test runs the real
ones on DynamoDB Local, which enforces the 100 items per transaction."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from registrations import selectors
from registrations.approvals import services as approval_services
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.events.models import Event, EventSeats
from registrations.models import CONFIRMED, WAITLISTED
from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import Question
from registrations.seating import holds, marks, shards
from registrations.seating.gate import CLOSED, reopened_lane
from registrations.seating.models import SeatGate, SeatShard
from registrations.services import registration_cancel
from tems.audit import Actor
from tems.clock import utcnow
from tems.metering import metered
from tems.outbox import outbox_relay
from tests.helpers import assert_invariants_clean
from tests.registrations.helpers import STARTS, make_event, new_key, register

LANES, SHARDS = 4, 10  # 20 seats at 2 a shard: shards 0-3 are lanes, 4-9 seats only, in groups [4-7], [8-9]
CAPACITY = 20


@pytest.fixture(autouse=True)
def few_lanes(settings, monkeypatch):
    settings.SEATS_PER_SHARD, settings.MAX_SEAT_SHARDS, settings.MAX_SEAT_LANES = 2, SHARDS, LANES
    settings.SEAT_BALANCE_SLACK = 10**9  # students stay on their home shards: the tests pick them by it
    monkeypatch.setattr(shards, "GROUP_SIZE", 4)


def shards_of(event_id: str) -> list[SeatShard]:
    return shards.shards_get(event_id=event_id, count=SHARDS)


def student_on(shard: int, *, prefix: str = "s", count: int = SHARDS) -> str:
    return next(f"{prefix}{n}" for n in range(100_000) if shards.home_shard(f"{prefix}{n}", count) == shard)


def page(event_id: str) -> None:
    """The event's page, read before a tap as a student's is: the process learns the shard count, so a
    registration starts at the student's home shard."""
    selectors.seats_for(event=selectors.event_get(event_id=event_id))


def fill(event_id: str, seats: int, prefix: str = "seated") -> None:
    for n in range(seats):
        assert register(event_id, f"{prefix}{n:03d}").data["status"] == CONFIRMED


def cancel_of(event_id: str, user_id: str):
    claim = selectors.claim_get(event_id=event_id, user_id=user_id)
    return lambda: registration_cancel(user_id=user_id, registration_id=claim.registration_id)


def edit(event_id: str, *, capacity: int = CAPACITY, starts_at=STARTS, **details):
    current = selectors.event_get(event_id=event_id)
    return event_services.event_update(event_id=event_id, expected_version=int(current.version),
                                       title=current.title, description="", location="", starts_at=starts_at,
                                       capacity=capacity, updated_by="staff", **details)


def cancel_event(event_id: str, key: str | None = None):
    return event_services.event_cancel_once(event_id=event_id, user_id="staff", cancelled_by="organiser",
                                            idempotency_key=key or new_key(), fingerprint=f"fp-cancel-{event_id}")


def test_a_new_event_puts_its_shards_past_the_lanes_before_the_event(ddb):
    event = make_event(capacity=CAPACITY)
    found = shards_of(event.event_id)
    assert [int(s.shard) for s in found] == list(range(SHARDS))
    assert {int(s.shards) for s in found} == {SHARDS} and sum(int(s.capacity) for s in found) == CAPACITY
    assert int(SeatGate.get(*SeatGate.key_for(event.event_id)).shards) == SHARDS
    assert_invariants_clean()


def test_a_creation_tap_retried_finds_its_own_shards_and_makes_one_event(ddb):
    """The event id follows from the tap, so the retry's shards are the first attempt's: nothing left behind."""
    tap = dict(user_id="staff", idempotency_key=new_key(), fingerprint="fp-create", title="Open day",
               starts_at=STARTS, capacity=CAPACITY, created_by="staff")
    first = event_services.event_create_once(**tap)
    again = event_services.event_create_once(**tap)
    assert again.replayed and again.response.body == first.response.body
    all_shards = list(SeatShard.scan(SeatShard.sk == SeatShard.ITEM))
    made = {shard.event_id for shard in all_shards}
    assert all(EventSeats.count(EventSeats.key_for(e)[0], EventSeats.sk == EventSeats.key_for(e)[1]) for e in made)
    body_id = json.loads(first.response.body)["id"]
    assert sum(1 for shard in all_shards if shard.event_id == body_id) == SHARDS
    assert_invariants_clean()


def test_students_homed_past_the_inner_lanes_sell_out_and_join_their_own_lane(ddb):
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    fill(event.event_id, CAPACITY)
    late = student_on(7, prefix="late")
    waiting = register(event.event_id, late).data
    assert waiting["status"] == WAITLISTED
    assert int(selectors.claim_get(event_id=event.event_id, user_id=late).lane) == shards.lane_of(7, SHARDS) == 7
    assert sum(int(s.taken) for s in shards_of(event.event_id)) == CAPACITY  # no oversell
    assert SeatGate.get(*SeatGate.key_for(event.event_id)).state == CLOSED
    assert [int(s.shard) for s in shards_of(event.event_id) if s.gate] == [7]
    assert_invariants_clean()


def test_a_cancel_reopens_the_gate_on_every_lane_and_a_newcomer_takes_the_seat(ddb):
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    fill(event.event_id, CAPACITY)
    register(event.event_id, student_on(8, prefix="late"))  # waits: the gate closes
    cancel_of(event.event_id, "seated000")()  # the seat goes to the one waiting
    cancel_of(event.event_id, "seated001")()  # nobody waits, the gate closed: it reopens on the lanes
    gate = SeatGate.get(*SeatGate.key_for(event.event_id), consistent_read=True)
    assert gate.state == 0 and int(gate.opened) == 1
    found = shards_of(event.event_id)
    assert [int(s.opened or 0) for s in found] == [1] * SHARDS
    assert register(event.event_id, student_on(9, prefix="new")).data["status"] == CONFIRMED
    assert_invariants_clean()


def full_with_nobody_waiting(event_id: str) -> None:
    """Full, the gate closed, nobody waiting: one joins (closing the gate), then a cancel hands them a seat."""
    fill(event_id, CAPACITY)
    register(event_id, student_on(8, prefix="late"))
    cancel_of(event_id, "seated000")()
    assert SeatGate.get(*SeatGate.key_for(event_id), consistent_read=True).state == CLOSED
    assert not any(int(s.waiting or 0) for s in shards_of(event_id))


def joins_during_the_reopening(monkeypatch, event_id: str, newcomer: str, *, outer_open=None,
                               then=None) -> None:
    """Run the next reopening of the outer lanes right after ``newcomer`` joined the waiting list: the race of a
    cancel that read nobody waiting with a join landing before its writes. ``outer_open`` replaces the reopening
    (a broken variant); ``then`` runs right after it, before the writer reads anything more."""
    original = marks.reopen_outer_lanes

    def joined_first(**kwargs):
        monkeypatch.setattr(marks, "reopen_outer_lanes", original)
        assert register(event_id, newcomer).data["status"] == WAITLISTED
        opened = (outer_open or original)(**kwargs)
        if then is not None:
            then()
        return opened

    monkeypatch.setattr(marks, "reopen_outer_lanes", joined_first)


def test_a_join_in_an_outer_lane_before_the_reopening_gets_the_freed_seat(ddb, monkeypatch):
    """The cancel read nobody waiting; a student joined lane 7 (past the inner lanes) before its writes. The
    outer lanes' reopening is refused there, the cancel reads again and the seat goes to that student."""
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    full_with_nobody_waiting(event.event_id)
    newcomer = student_on(7, prefix="new")
    joins_during_the_reopening(monkeypatch, event.event_id, newcomer)
    freed = int(selectors.claim_get(event_id=event.event_id, user_id="seated001").shard)
    cancel_of(event.event_id, "seated001")()
    claim = selectors.claim_get(event_id=event.event_id, user_id=newcomer)
    assert (claim.status, int(claim.shard)) == (CONFIRMED, freed)
    assert SeatGate.get(*SeatGate.key_for(event.event_id), consistent_read=True).state == CLOSED
    assert sum(int(s.taken) for s in shards_of(event.event_id)) == CAPACITY
    assert_invariants_clean()


def test_the_broken_variant_reopening_outer_lanes_whoever_waits_leaves_a_student_behind_a_free_seat(
        ddb, monkeypatch):
    """The same race with the outer lanes opened without "nobody waits in it": the cancel's transaction, which
    checks the inner lanes only, reopens the gate and frees the seat while the student waits in lane 7."""
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    full_with_nobody_waiting(event.event_id)
    newcomer = student_on(7, prefix="new")

    def whoever_waits(*, event_id, count, gate):
        marks.write_seat_only(event_id=event_id, count=count, actions=lambda: reopened_lane(gate))
        return True

    joins_during_the_reopening(monkeypatch, event.event_id, newcomer, outer_open=whoever_waits)
    cancel_of(event.event_id, "seated001")()
    assert selectors.claim_get(event_id=event.event_id, user_id=newcomer).status == WAITLISTED
    assert sum(int(s.taken) for s in shards_of(event.event_id)) == CAPACITY - 1
    with pytest.raises(AssertionError, match="waiting in lanes whose gate is open"):
        assert_invariants_clean()


def test_a_join_in_an_inner_lane_after_the_outer_lanes_opened_gets_the_seat_and_newcomers_use_the_inner_lanes(
        ddb, monkeypatch):
    """The outer lanes opened, then a student joined inner lane 2 before the cancel's own transaction: that is
    refused (someone waits in it), the seat goes to the student, and the outer lanes stay open one reopening
    ahead of the gate; a newcomer homed on one of them joins an inner lane."""
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    full_with_nobody_waiting(event.event_id)
    joiner = student_on(2, prefix="inner")
    original = marks.reopen_outer_lanes

    def then_a_join(**kwargs):
        monkeypatch.setattr(marks, "reopen_outer_lanes", original)
        opened = original(**kwargs)
        assert register(event.event_id, joiner).data["status"] == WAITLISTED
        return opened

    monkeypatch.setattr(marks, "reopen_outer_lanes", then_a_join)
    cancel_of(event.event_id, "seated001")()
    assert selectors.claim_get(event_id=event.event_id, user_id=joiner).status == CONFIRMED
    gate = SeatGate.get(*SeatGate.key_for(event.event_id), consistent_read=True)
    assert gate.state == CLOSED and int(gate.opened) == 0
    assert {int(s.opened or 0) for s in shards_of(event.event_id)[LANES:]} == {1}
    later = student_on(6, prefix="later")
    assert register(event.event_id, later).data["status"] == WAITLISTED
    assert int(selectors.claim_get(event_id=event.event_id, user_id=later).lane) < LANES
    assert_invariants_clean()


def test_a_capacity_edit_moves_the_lanes_slices_and_keeps_the_others(ddb):
    event = make_event(capacity=CAPACITY)
    fill(event.event_id, 6)
    before = {int(s.shard): int(s.capacity) for s in shards_of(event.event_id)}
    edit(event.event_id, capacity=CAPACITY + 8)
    after = {int(s.shard): int(s.capacity) for s in shards_of(event.event_id)}
    assert sum(after.values()) == CAPACITY + 8
    assert all(after[k] == before[k] for k in range(LANES, SHARDS))
    edit(event.event_id, capacity=CAPACITY - 3)
    assert sum(int(s.capacity) for s in shards_of(event.event_id)) == CAPACITY - 3
    assert_invariants_clean()
    floor = shards.seat_only_floor(shards_of(event.event_id))
    with pytest.raises(RegistrationError) as refused:
        edit(event.event_id, capacity=floor - 1)
    assert refused.value.code == "invalid" and str(floor) in refused.value.errors["capacity"][0]
    assert int(EventSeats.get(*EventSeats.key_for(event.event_id)).capacity) == CAPACITY - 3
    assert_invariants_clean()


def test_a_raise_while_people_wait_goes_to_them_through_the_lanes(ddb):
    event = make_event(capacity=CAPACITY)
    fill(event.event_id, CAPACITY)
    for n in range(3):
        assert register(event.event_id, f"wait{n}").data["status"] == WAITLISTED
    edit(event.event_id, capacity=CAPACITY + 2)
    statuses = [selectors.claim_get(event_id=event.event_id, user_id=f"wait{n}").status for n in range(3)]
    assert statuses.count(CONFIRMED) == 2 and statuses.count(WAITLISTED) == 1
    assert_invariants_clean()


def test_a_raise_that_found_nobody_waiting_goes_to_a_student_who_joined_an_outer_lane_meanwhile(ddb, monkeypatch):
    """The edit read nobody waiting (the new seat would reopen the gate); a student joined lane 7 before its
    writes: the outer lanes' reopening is refused, the edit reads again and the raise goes to that student."""
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    full_with_nobody_waiting(event.event_id)
    newcomer = student_on(7, prefix="new")
    joins_during_the_reopening(monkeypatch, event.event_id, newcomer)
    edit(event.event_id, capacity=CAPACITY + 1)
    assert selectors.claim_get(event_id=event.event_id, user_id=newcomer).status == CONFIRMED
    assert SeatGate.get(*SeatGate.key_for(event.event_id), consistent_read=True).state >= CLOSED  # still full
    assert_invariants_clean()


def test_an_edit_whose_outer_reopening_was_refused_reads_everything_again(ddb, monkeypatch):
    """The edit read nobody waiting; a student joined lane 7 before its reopening of the outer lanes (refused
    there) and left again before the edit read anything more. The edit starts over from its reads: it reopens
    every lane, lane 7 too, and a newcomer homed there takes the new seat."""
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    full_with_nobody_waiting(event.event_id)
    passer = student_on(7, prefix="pass")
    joins_during_the_reopening(monkeypatch, event.event_id, passer, then=lambda: cancel_of(event.event_id, passer)())
    edit(event.event_id, capacity=CAPACITY + 1)
    assert not SeatGate.get(*SeatGate.key_for(event.event_id), consistent_read=True).closed
    assert not any(int(s.gate or 0) for s in shards_of(event.event_id))
    assert register(event.event_id, student_on(7, prefix="new")).data["status"] == CONFIRMED
    assert_invariants_clean()


def test_a_window_edit_reaches_every_shard_and_leaves_none_held(ddb):
    event = make_event(capacity=CAPACITY)
    closes = utcnow() + timedelta(days=3)
    edit(event.event_id, registration_closes_at=closes)
    found = shards_of(event.event_id)
    assert {s.closes_at for s in found} == {closes}
    assert not any(s.held for s in found)
    assert_invariants_clean()


def test_a_held_shard_takes_no_seat_and_the_student_sits_elsewhere(ddb):
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    token = holds.hold(event_id=event.event_id, count=SHARDS)
    student = student_on(6)
    assert register(event.event_id, student).data["status"] == CONFIRMED
    assert int(selectors.claim_get(event_id=event.event_id, user_id=student).shard) < LANES
    holds.release(event_id=event.event_id, token=token)
    assert not any(s.held for s in shards_of(event.event_id))
    assert register(event.event_id, student_on(6, prefix="t")).data["status"] == CONFIRMED


def test_nobody_joins_the_waiting_list_while_a_held_shard_has_a_seat(ddb):
    """The lanes are full, a shard past them has room but is held: a newcomer is told to try again, and does
    not wait beside that seat."""
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    fill(event.event_id, CAPACITY)
    # Nobody waits and the gate is open: the seat freed past the inner lanes is the only free one.
    leaver = next(f"seated{n:03d}" for n in range(CAPACITY)
                  if int(selectors.claim_get(event_id=event.event_id, user_id=f"seated{n:03d}").shard) >= LANES)
    cancel_of(event.event_id, leaver)()
    assert [int(s.shard) >= LANES for s in shards_of(event.event_id) if int(s.taken) < int(s.capacity)] == [True]
    token = holds.hold(event_id=event.event_id, count=SHARDS)
    with pytest.raises(RegistrationError) as busy:
        register(event.event_id, "newcomer", sleep=lambda _: None)
    assert busy.value.code == "busy"
    assert selectors.claim_get(event_id=event.event_id, user_id="newcomer") is None
    holds.release(event_id=event.event_id, token=token)
    assert register(event.event_id, "newcomer").data["status"] == CONFIRMED
    assert_invariants_clean()


def test_a_student_whose_outer_lane_is_held_joins_an_inner_lane(ddb):
    """Full, the gate closed: an edit holds the lanes past the inner ones while it changes their copies. A
    student homed on one of them joins an inner lane instead of waiting for the hold to end."""
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    full_with_nobody_waiting(event.event_id)
    token = holds.hold(event_id=event.event_id, count=SHARDS)
    newcomer = student_on(6, prefix="held")
    assert register(event.event_id, newcomer, sleep=lambda _: None).data["status"] == WAITLISTED
    assert int(selectors.claim_get(event_id=event.event_id, user_id=newcomer).lane) < LANES
    holds.release(event_id=event.event_id, token=token)
    assert_invariants_clean()


def test_a_hold_whose_edit_died_is_released_by_the_outbox(ddb):
    event = make_event(capacity=CAPACITY)
    holds.hold(event_id=event.event_id, count=SHARDS)
    handlers = {holds.SEAT_COPIES_REQUESTED: holds.seat_copies_requested}
    assert outbox_relay(handlers=handlers).delivered == 0  # not due yet: its edit may still be under way
    later = utcnow() + holds.RELEASE_AFTER + timedelta(seconds=1)
    assert outbox_relay(handlers=handlers, now=lambda: later).delivered == 1
    assert not any(s.held for s in shards_of(event.event_id))


def test_a_questions_edit_reaches_every_shard_and_answers_land_past_the_lanes(ddb):
    question_sets.known.reset()
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    diet = Question(id="d1e7d1e7", label="Diet", kind="text")
    saved = question_services.questions_update(event_id=event.event_id, expected_version=0, questions=[diet],
                                               updated_by="staff")
    assert {int(s.questions) for s in shards_of(event.event_id)} == {saved.version}
    assert not any(s.held for s in shards_of(event.event_id))
    answers = question_sets.parse_answers(questions=saved, given={diet.id: "vegan"})
    student = student_on(9)
    outcome = register(event.event_id, student, answers=answers, questions_version=saved.version)
    assert outcome.data["status"] == CONFIRMED
    assert int(selectors.claim_get(event_id=event.event_id, user_id=student).shard) == 9
    question_sets.known.reset()


def test_a_cancellation_marks_every_shard_with_the_events_own_time(ddb):
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    fill(event.event_id, 3)
    cancel_event(event.event_id)
    cancelled_at = Event.get(*Event.key_for(event.event_id)).cancelled_at
    assert {s.cancelled_at for s in shards_of(event.event_id)} == {cancelled_at}
    with pytest.raises(RegistrationError) as refused:
        register(event.event_id, student_on(9, prefix="late"))
    assert refused.value.code == "conflict"
    assert_invariants_clean()


def test_a_second_cancellation_with_another_key_leaves_the_first_ones_marks(ddb):
    event = make_event(capacity=CAPACITY)
    first = cancel_event(event.event_id)
    second = cancel_event(event.event_id)
    assert second.response.body == first.response.body
    cancelled_at = Event.get(*Event.key_for(event.event_id)).cancelled_at
    assert {s.cancelled_at for s in shards_of(event.event_id)} == {cancelled_at}
    assert_invariants_clean()


def test_no_seat_past_the_lanes_is_taken_once_the_event_is_cancelled(ddb, monkeypatch):
    """Right after the event's own cancellation commits, a student homed past the lanes is refused: those
    shards were marked before it. The broken variant marks them after it (as a fan-out would), and the
    student gets a seat of a cancelled event."""
    seats = _seat_right_after_the_cancellation(monkeypatch, broken=False)
    assert seats == []
    assert_invariants_clean()


def test_the_broken_variant_marking_after_the_event_admits_a_student(ddb, monkeypatch):
    seats = _seat_right_after_the_cancellation(monkeypatch, broken=True)
    assert seats == [CONFIRMED]  # the order matters: this is what the pre-marking prevents


def _seat_right_after_the_cancellation(monkeypatch, *, broken: bool) -> list[str]:
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    real_commit_tap = event_services.commit_tap
    seats: list[str] = []

    def commit_then_register(*args, **kwargs):
        result = real_commit_tap(*args, **kwargs)
        try:
            seats.append(register(event.event_id, student_on(9, prefix="sneak")).data["status"])
        except RegistrationError:
            pass
        return result

    monkeypatch.setattr(event_services, "commit_tap", commit_then_register)
    if broken:
        real_write = marks.write_seat_only
        calls = iter(range(10**6))

        def skip_the_first(**kwargs):
            if next(calls):
                real_write(**kwargs)

        monkeypatch.setattr(event_services.marks, "write_seat_only", skip_the_first)
    cancel_event(event.event_id)
    return seats


def test_the_real_numbers_fit_dynamodbs_limits(ddb, settings, monkeypatch):
    """200 shards, 78 lanes, groups of 90: creation, a window edit, a cancel reopening the gate and the event's
    cancellation, on DynamoDB Local (which refuses a transaction of more than 100 items)."""
    settings.SEATS_PER_SHARD, settings.MAX_SEAT_SHARDS = 1, shards.MAX_SHARDS
    settings.MAX_SEAT_LANES = shards.MAX_LANES
    monkeypatch.setattr(shards, "GROUP_SIZE", 90)
    event = make_event(capacity=shards.MAX_SHARDS)
    count = shards.MAX_SHARDS
    assert len(shards.shards_get(event_id=event.event_id, count=count)) == count
    edit(event.event_id, capacity=shards.MAX_SHARDS, registration_closes_at=utcnow() + timedelta(days=2))
    assert not any(s.held for s in shards.shards_get(event_id=event.event_id, count=count))
    cancel_event(event.event_id)
    assert {s.cancelled_at is not None for s in shards.shards_get(event_id=event.event_id, count=count)} == {True}
    assert_invariants_clean()


def test_the_largest_edit_fits_dynamodbs_limit_with_every_lane_and_every_facet(ddb, settings, monkeypatch):
    """An edit that re-slices an event with every lane and changes every facet (a new title, category, organizer
    and listing) writes the lanes, the gate, the event, its outbox message, its audit entry and the facets dropped
    and put, in one transaction: DynamoDB Local refuses one of more than 100 items."""
    settings.SEATS_PER_SHARD, settings.MAX_SEAT_SHARDS = 1, shards.MAX_SHARDS
    settings.MAX_SEAT_LANES = shards.MAX_LANES
    monkeypatch.setattr(shards, "GROUP_SIZE", 90)
    event = make_event(capacity=shards.MAX_SHARDS, title="alpha beta gamma delta epsilon zeta", category="talk",
                       organizer="Old Org", public=True)
    current = selectors.event_get(event_id=event.event_id)
    event_services.event_update(event_id=event.event_id, expected_version=int(current.version),
                                title="one two three four five six", description="", location="", starts_at=STARTS,
                                capacity=shards.MAX_SHARDS - 7, updated_by="staff", category="social",
                                organizer="New Org", public=False,
                                actor=Actor(user_id="staff-key", roles={}, platform_admin=True))
    assert int(selectors.event_get(event_id=event.event_id).capacity) == shards.MAX_SHARDS - 7
    assert_invariants_clean()


def test_a_seat_past_the_lanes_is_still_one_request(ddb):
    """The hot path is unchanged: one transaction, whichever shard the student's home is."""
    event = make_event(capacity=CAPACITY)
    page(event.event_id)
    with metered() as meter:
        assert register(event.event_id, student_on(8)).data["status"] == CONFIRMED
    assert dict(meter.requests) == {"TransactWriteItems": 1}


def draft_event() -> str:
    event = event_services.event_create(title="Go club night", starts_at=STARTS, capacity=CAPACITY,
                                        created_by="soc", team="go-soc", draft=True)
    return event.event_id


def publish(event_id: str):
    return approval_services.event_publish_once(event_id=event_id, user_id="approver", published_by="Ann",
                                                idempotency_key=new_key(), fingerprint=f"fp-publish-{event_id}")


def test_a_draft_marks_every_shard_and_its_publication_lifts_every_mark(ddb):
    event_id = draft_event()
    assert all(s.draft for s in shards_of(event_id))
    past = student_on(LANES + 1)
    with pytest.raises(RegistrationError) as refused:
        register(event_id, past)
    assert refused.value.code == "not_found"
    publish(event_id)
    assert not any(s.draft for s in shards_of(event_id))
    page(event_id)
    assert register(event_id, past).data["status"] == CONFIRMED
    assert_invariants_clean()


def test_a_publication_whose_process_died_before_the_shards_past_the_lanes_is_finished_by_the_outbox(
        ddb, monkeypatch):
    event_id = draft_event()

    def lost(**_):
        raise RuntimeError("the process died after the publication's commit")

    monkeypatch.setattr(holds, "release", lost)
    publish(event_id)
    marked = [int(s.shard) for s in shards_of(event_id) if s.draft]
    assert marked == list(range(LANES, SHARDS))  # the lanes opened with the event, the rest wait
    # Meanwhile a student homed past the lanes sits on a lane: a marked shard is passed by, like a held one.
    page(event_id)
    assert register(event_id, student_on(LANES + 2)).data["status"] == CONFIRMED
    monkeypatch.undo()
    handlers = {holds.SEAT_COPIES_REQUESTED: holds.seat_copies_requested}
    assert outbox_relay(handlers=handlers).delivered == 1
    assert not any(s.draft for s in shards_of(event_id))
    assert_invariants_clean()
