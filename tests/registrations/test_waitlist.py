"""Exact waitlist positions from the departure counters (registrations.seating.positions).

The tree's arithmetic runs on moto (single-threaded); positions under concurrent joins, cancellations and
promotions run on DynamoDB Local and are compared with a brute-force count of the entries after every step.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from registrations import selectors, services
from registrations.events import services as event_services
from registrations.models import CONFIRMED, WAITLISTED
from registrations.seating import lanes, positions, router, shards
from registrations.seating.hints import hints
from registrations.seating.models import SeatShard, WaitlistQueue
from registrations.services import promotion
from tems.clock import utcnow
from tems.metering import metered
from tems.transactions import LabelledTransaction
from tests.helpers import assert_invariants_clean
from tests.race import race
from tests.registrations.helpers import STARTS, make_event, register
from tests.support.faults import CONFLICT, Fault, inject


def depart(event_id: str, tickets: list[int]) -> None:
    transaction = LabelledTransaction()
    positions.record_departures(transaction, event_id=event_id, tickets=tickets)
    transaction.commit()


@pytest.mark.parametrize("gone", [
    [1, 2, 3],
    [5, 99, 100, 101, 150, 199, 200],
    [1, 9_999, 10_000, 10_001, 123_456, 999_999, 1_000_000, 98_765_432],
])
def test_position_is_the_ticket_minus_departures_before_it(moto_ddb, gone):
    depart("e1", gone[: len(gone) // 2])
    depart("e1", gone[len(gone) // 2:])
    depart("other", [1, 2, 3, 4])  # another event's departures count for nobody here
    probes = sorted({1, 2, 4, 50, 98, 99, 100, 101, 102, 151, 201, 10_000, 10_002, 200_000, 1_000_001,
                     99_999_999} - set(gone))
    got = positions.positions(tickets=[("e1", t) for t in probes])
    assert got == {("e1", t): t - sum(1 for g in gone if g < t) for t in probes}


def test_a_position_at_ten_thousand_is_one_request_and_few_read_units(ddb):
    gone = list(range(1, 10_000, 97))
    for start in range(0, len(gone), 10):
        depart("e1", gone[start:start + 10])
    for ticket in (10_000, 9_999, 12_345):
        with metered() as meter:
            positions.position(event_id="e1", ticket=ticket)
        # The counter nodes, then the event and its lanes' blocks (none here: no such event).
        assert meter.total_requests <= 3
        assert meter.read_capacity <= 4  # one strongly consistent unit per node, one node per non-zero digit


def test_far_apart_heads_are_promoted_in_batches_that_fit_one_transaction():
    # Heads 1, 101, 201, ... each need their own level-0 node: 15 of them would not fit 100 items.
    tickets = [1 + 10_000 * n for n in range(15)]
    fitted = positions.fit_batch(tickets, items_per_ticket=5, fixed_items=1)
    assert 1 <= fitted < 15
    assert 1 + 5 * fitted + positions.departure_item_count(tickets[:fitted]) <= positions.MAX_TRANSACTION_ITEMS
    assert positions.fit_batch(list(range(1, 16)), items_per_ticket=5, fixed_items=1) == 15


# --- on DynamoDB Local, against a brute-force count -----------------------------------------------------------

def assert_positions_exact(event_id: str) -> None:
    entries = selectors.waitlist_entries(event_id=event_id)
    expected = {(event_id, int(entry.ticket)): n for n, entry in enumerate(entries, start=1)}
    got = positions.positions(tickets=expected)
    assert got == expected, f"positions drifted from the entries: {sorted(got.items())} != {sorted(expected.items())}"


def waiting_students(event_id: str) -> list[str]:
    return [entry.user_id for entry in selectors.waitlist_entries(event_id=event_id)]


def confirmed_students(event_id: str) -> list[str]:
    return [r.user_id for r in selectors.event_registrations(event_id=event_id) if r.status == CONFIRMED]


def cancel(event_id: str, user_id: str) -> Callable[[], Any]:
    claim = selectors.claim_get(event_id=event_id, user_id=user_id)
    return lambda: services.registration_cancel(user_id=user_id, registration_id=claim.registration_id)


def run_scenario(seed: int) -> None:
    rng = random.Random(seed)
    event = make_event(capacity=3)
    event_id = event.event_id
    joined = 0

    def joins(n: int) -> list[Callable[[], Any]]:
        nonlocal joined
        calls = [lambda u=f"s{joined + k}": register(event_id, u) for k in range(n)]
        joined += n
        return calls

    race(joins(20))
    assert_positions_exact(event_id)
    for step in range(4):
        waiting, confirmed = waiting_students(event_id), confirmed_students(event_id)
        # Cancellations in the middle of the queue, confirmed students leaving (their seat promotes the head:
        # several of them race for the same head) and newcomers, all at once.
        calls = [cancel(event_id, user) for user in rng.sample(waiting[1:-1], 2)]
        calls += [cancel(event_id, user) for user in rng.sample(confirmed, 2)]
        calls += joins(3)
        race(calls)
        assert_positions_exact(event_id)
        if step == 1:
            # Raised capacity: a batch promotion from the head.
            current = selectors.event_get(event_id=event_id)
            event_services.event_update(event_id=event_id, expected_version=int(current.version),
                                  title=current.title, description="", location="", starts_at=STARTS,
                                  capacity=int(current.capacity) + 3, updated_by="staff")
            assert_positions_exact(event_id)
    for user in waiting_students(event_id):
        claim = selectors.claim_get(event_id=event_id, user_id=user)
        assert claim.status == WAITLISTED
    assert_invariants_clean()


def test_positions_stay_exact_under_concurrent_joins_cancellations_and_promotions(ddb):
    run_scenario(seed=10)


def test_a_counter_moved_outside_the_transaction_is_caught(ddb, monkeypatch):
    """The scenario above must be able to fail: counting a departure as soon as it is planned (outside the
    transaction) counts again every attempt that then loses its race, and the brute-force check sees it."""
    original = positions.record_departures

    def counted_outside(transaction, *, event_id, tickets):
        separate = LabelledTransaction()
        original(separate, event_id=event_id, tickets=tickets)
        separate.commit()

    monkeypatch.setattr(positions, "record_departures", counted_outside)
    with pytest.raises(AssertionError, match="positions drifted from the entries"):
        run_scenario(seed=10)


# --- the queue item: blocks claimed by a single write, installed by the lane's join -----------------------


@pytest.mark.parametrize(("used", "grows_to"), [(1, 4), (4, 16), (16, 64), (64, 64)])
def test_a_lane_that_used_up_its_block_within_the_second_claims_one_four_times_as_big(used, grows_to):
    now = utcnow()
    lane = SeatShard(*SeatShard.key_for("e", 0), lane_next=10, lane_end=10, lane_size=used,
                     lane_at=now - timedelta(seconds=lanes.block_seconds() / 2))
    assert lanes.next_block_size(lane, now) == grows_to
    lane.lane_at = now - timedelta(seconds=2 * lanes.block_seconds())  # used up, but a second ago: quiet
    assert lanes.next_block_size(lane, now) == 1


@pytest.mark.parametrize(("used", "grows_to"), [(None, 16), (1, 16), (4, 64), (64, 64)])
def test_a_joiner_that_met_the_crowd_claims_sixteen_times_as_big_and_starts_a_lane_at_sixteen(used, grows_to):
    now = utcnow()
    lane = SeatShard(*SeatShard.key_for("e", 0), lane_next=10, lane_end=10, lane_size=used,
                     lane_at=None if used is None else now - timedelta(seconds=lanes.block_seconds() / 2))
    assert lanes.next_block_size(lane, now, crowded=True) == grows_to
    assert lanes.next_block_size(lane, now) == (1 if used is None else min(4 * used, 64))


@pytest.mark.parametrize("conflicts", [0, 1])
def test_a_join_after_a_conflict_starts_its_lane_with_a_block_of_sixteen(ddb, conflicts):
    """The end of a burst: every lane starts at once, and a ramp of 1, 4, 16, 64 was four claims a lane on the one
    queue item. A request that met a conflict (the crowd) starts its lane at 16; without one (a quiet event, and
    DynamoDB Local, which never sends one) the first block is one ticket, as before."""
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    seat = Fault(CONFLICT, operations={"TransactWriteItems"}, times=conflicts,
                 when=lambda params: "EVENTSEATS#" in json.dumps(params))
    with inject(seat) as faults:
        outcome = register(event.event_id, "bob", sleep=lambda _: None)
    assert bool(faults.fired(CONFLICT)) == bool(conflicts)
    assert (outcome.data["status"], outcome.data["position_at_most"]) == (WAITLISTED, 1)
    assert int(lanes.queue_read(event.event_id).seq) == (16 if conflicts else 1)
    assert_invariants_clean()


def lane_image(event_id: str, shard: int = 0) -> SeatShard:
    return SeatShard.get(*SeatShard.key_for(event_id, shard), consistent_read=True)


def assert_queue_accounts(event_id: str) -> None:
    """Every ticket the queue handed out is waiting, or counted in ``left`` (departed or gone), or still unused
    in a lane's current or pending block: what a join's answer relies on."""
    queue = WaitlistQueue.get(*WaitlistQueue.key_for(event_id), consistent_read=True)
    unused = sum(end - start for start, end in positions.lane_blocks([event_id])[event_id])
    waiting = len(selectors.waitlist_entries(event_id=event_id))
    assert int(queue.left) == int(queue.seq) - waiting - unused, (
        f"left={queue.left}, but seq {queue.seq} - {waiting} waiting - {unused} unused = "
        f"{int(queue.seq) - waiting - unused}")


def full_with_one_waiting() -> str:
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    assert register(event.event_id, "dan").data["position_at_most"] == 1
    return event.event_id


@pytest.mark.parametrize(("others", "size"), [(lanes.CROWD_LANES - 1, 1), (lanes.CROWD_LANES, lanes.MAX_BLOCK)])
def test_a_lanes_first_block_is_the_biggest_when_many_other_lanes_are_claiming(ddb, others, size):
    """The waiting list forming in a burst over many lanes: each lane claims once instead of ramping up, so the
    one queue item is written once per lane. A claim or two elsewhere (a quiet event) keeps blocks of one."""
    event_id = full_with_one_waiting()
    now = utcnow()
    WaitlistQueue(*WaitlistQueue.key_for(event_id)).update(actions=[
        WaitlistQueue.claim_at[str(lane)].set(int(now.timestamp() * 1000)) for lane in range(100, 100 + others)])
    stale = int((now - timedelta(seconds=2 * lanes.block_seconds())).timestamp() * 1000)
    WaitlistQueue(*WaitlistQueue.key_for(event_id)).update(actions=[WaitlistQueue.claim_at["99"].set(stale)])
    image = lane_image(event_id)
    image.lane_at = None  # a lane's first block
    block = lanes.claim_block(event_id=event_id, lane=image, size=1, now=now)
    assert (block.claimed, block.end - block.first) == (True, size)


def test_a_claim_repeated_after_a_lost_answer_finds_its_own_block_pending(ddb, settings):
    settings.WAITLIST_BLOCK_SECONDS = 60  # a slow machine must not make the pending block stale
    event_id = full_with_one_waiting()
    image = lane_image(event_id)
    first = lanes.claim_block(event_id=event_id, lane=image, size=1, now=utcnow())
    # The answer was lost and the same claim is sent again (by botocore, or by the app's next round).
    again = lanes.claim_block(event_id=event_id, lane=image, size=1, now=utcnow())
    assert (first.first, first.end, first.claimed) == (2, 3, True)
    assert (again.first, again.end, again.claimed) == (2, 3, False)
    # Nobody installed it yet: its ticket counts as unused, so positions stay exact.
    assert_positions_exact(event_id)
    assert_queue_accounts(event_id)
    bob = register(event_id, "bob")
    assert (bob.data["position_at_most"], selectors.claim_get(event_id=event_id, user_id="bob").ticket) == (2, 2)
    assert WaitlistQueue.get(*WaitlistQueue.key_for(event_id)).seq == 2  # the one block, not two
    assert_positions_exact(event_id)
    assert_queue_accounts(event_id)
    assert_invariants_clean()


def test_a_claim_without_the_per_lane_condition_loses_a_block_and_positions_drift(ddb, monkeypatch, settings):
    settings.WAITLIST_BLOCK_SECONDS = 60
    # The broken variant: a second claim replaces a pending one, whose ticket is then neither waiting, gone nor
    # unused, and every position behind it is one too high.
    monkeypatch.setattr(lanes, "claim_condition", lambda lane: WaitlistQueue.claim_last.exists())
    event_id = full_with_one_waiting()
    image = lane_image(event_id)
    # A quiet lane's image (its block installed long ago): no read of the queue before the claim, as for two
    # claimers who both read it before either wrote (on a busy lane, or for a lane's first block, the read would
    # find the first claim pending): only the condition decides.
    image.lane_at = utcnow() - timedelta(seconds=2 * lanes.block_seconds())
    lanes.claim_block(event_id=event_id, lane=image, size=1, now=utcnow())
    lanes.claim_block(event_id=event_id, lane=image, size=1, now=utcnow())
    register(event_id, "bob")
    with pytest.raises(AssertionError):
        assert_positions_exact(event_id)


def test_a_block_left_pending_too_long_is_retired_not_handed_out_late(ddb):
    event_id = full_with_one_waiting()
    old = lanes.claim_block(event_id=event_id, lane=lane_image(event_id), size=1,
                               now=utcnow() - timedelta(seconds=5))
    assert (old.first, old.end) == (2, 3)
    # Ticket 2 would put bob ahead of everyone who joined other lanes in those five seconds: it goes unused
    # (recorded as gone in the same transaction that retires it), and bob's lane claims afresh.
    with metered() as meter:
        bob = register(event_id, "bob")
    assert selectors.claim_get(event_id=event_id, user_id="bob").ticket == 3
    # His lane's read (this process saw the event full; his claim and key record in the same request); the
    # queue's read (the lane is busy: dan's block is under a second old), which finds the pending block; the
    # retirement; the queue read again and the fresh claim; his join.
    assert dict(meter.requests) == {"TransactWriteItems": 2, "UpdateItem": 1, "GetItem": 2, "BatchGetItem": 1}
    assert bob.data["position_at_most"] == 2
    assert_positions_exact(event_id)
    assert_queue_accounts(event_id)
    assert_invariants_clean()


@pytest.mark.parametrize("broken", [False, True])
def test_a_claim_that_counted_an_old_block_gone_is_corrected_when_the_lane_used_it(ddb, monkeypatch, settings,
                                                                                   broken):
    settings.WAITLIST_BLOCK_SECONDS = 60  # eve joins within it however slow the machine
    settings.WAITLIST_BLOCK_GROWTH = 2  # the numbers below
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    register(event.event_id, "dan")  # ticket 1
    register(event.event_id, "eve")  # within the block's time: a block of two, [2, 4); ticket 3 is left
    # A claim on a clock two minutes ahead finds that block expired and counts ticket 3 gone...
    lanes.claim_block(event_id=event.event_id, lane=lane_image(event.event_id), size=1,
                         now=utcnow() + timedelta(minutes=2))
    # ...but on the app's clock it is not, and frank takes ticket 3 before anyone installs the claim.
    register(event.event_id, "frank")
    if broken:
        monkeypatch.setattr(router.Join, "correction",
                            lambda self: (self.block.end - self.block.first) if self.block.stale else 0)
    gil = register(event.event_id, "gil")  # installs the pending block: ticket 4
    assert selectors.claim_get(event_id=event.event_id, user_id="gil").ticket == 4
    if broken:
        assert gil.data["position_at_most"] == 3  # one too few: the lie the correction prevents
        with pytest.raises(AssertionError):
            assert_queue_accounts(event.event_id)
        return
    assert gil.data["position_at_most"] == 4
    assert_positions_exact(event.event_id)
    assert_queue_accounts(event.event_id)
    assert_invariants_clean()


@pytest.mark.parametrize("broken", [False, True])
def test_a_position_skips_lanes_with_nothing_unused_below_it_until_a_block_is_claimed_since(ddb, monkeypatch,
                                                                                           settings, broken):
    """A position reads only the lanes whose last image (read before the queue item) may hold unused tickets below
    the ticket: a lane's unused tickets only shrink until it installs a newer block, and that block is claimed on
    the queue item first. The broken variant trusts the image after a claim: a block claimed before bob's and
    installed after his read is then counted unused though carl holds its ticket, and bob's position is low."""

    settings.WAITLIST_BLOCK_SECONDS = 60  # the pending block below is installed, not retired, however slow the run
    settings.SEATS_PER_SHARD, settings.MAX_SEAT_SHARDS = 3, 40  # 12 seats: 4 shards, 4 lanes
    if broken:
        def trusting(event_id, shard, queue, ticket, queue_asked_at):  # no look at the queue's latest claim
            image = hints.lane(event_id, shard)
            if image is None or (image[1] or 0) < max(image[2] or 0, image[1] or 0) and (image[1] or 0) < ticket:
                return None
            return -1 if image[2] is None else image[2]

        monkeypatch.setattr(positions, "_settled_below", trusting)
    event = make_event(capacity=12)
    event_id = event.event_id
    hints.remember_shards(event_id, 4)
    for n in range(12):
        register(event_id, f"seated{n:02d}")
    homed = {lane: [f"w{lane}-{n}" for n in range(400) if shards.home_shard(f"w{lane}-{n}", 4) == lane][:2]
             for lane in (0, 1)}
    dan, carl = homed[0]
    bob = homed[1][0]
    assert register(event_id, dan).data["position_at_most"] == 1  # lane 0: ticket 1
    # Lane 0's next block, ticket 2, is claimed and left pending (its joiner's transaction never landed)...
    lanes.claim_block(event_id=event_id, lane=lane_image(event_id, 0), size=1, now=utcnow())
    # ...bob takes ticket 3 in lane 1, and his position read counts ticket 2 unused.
    register(event_id, bob)
    assert int(selectors.claim_get(event_id=event_id, user_id=bob).ticket) == 3
    assert positions.positions(tickets=[(event_id, 3)]) == {(event_id, 3): 2}  # every lane read, and remembered
    register(event_id, carl)  # installs lane 0's pending block: ticket 2
    assert int(selectors.claim_get(event_id=event_id, user_id=carl).ticket) == 2
    if broken:
        assert positions.positions(tickets=[(event_id, 3)]) == {(event_id, 3): 2}  # carl's ticket counted unused
        return
    assert positions.positions(tickets=[(event_id, 3)]) == {(event_id, 3): 3}
    assert_positions_exact(event_id)
    # Now every lane's last image is its installed block with nothing unused below ticket 3: the nodes and the
    # queue item, and no lane.
    with metered() as meter:
        assert positions.positions(tickets=[(event_id, 3)]) == {(event_id, 3): 3}
    assert dict(meter.requests) == {"BatchGetItem": 1}
    assert_invariants_clean()


def test_a_promotion_a_request_cannot_finish_is_logged_and_left_to_the_outbox(monkeypatch, caplog):
    """A request that finds a promotion pending finishes it if it can; if it cannot, the request still answers
    (the outbox message of the edit that freed the seats finishes the promotion) and the log says so."""
    def unreachable(*, event_id):
        raise ConnectionError("DynamoDB did not answer")

    monkeypatch.setattr(promotion, "waitlist_promote", unreachable)
    with caplog.at_level(logging.WARNING, logger=promotion.logger.name):
        promotion.waitlist_promote_best_effort("e1")
    assert "could not finish the promotion of event e1" in caplog.text
