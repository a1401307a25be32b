"""Exact waitlist positions from the departure counters (registrations.waitlist).

The tree's arithmetic runs on moto (single-threaded); positions under concurrent joins, cancellations and
promotions run on DynamoDB Local and are compared with a brute-force count of the entries after every step.
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command

from registrations import selectors, services, waitlist
from registrations.models import CONFIRMED, WAITLISTED, Event
from tems.dynamo import metered
from tems.transactions import LabelledTransaction
from tests.race import race
from tests.registrations.helpers import STARTS, assert_invariants_clean, make_event, register


def depart(event_id: str, tickets: list[int]) -> None:
    transaction = LabelledTransaction()
    waitlist.record_departures(transaction, event_id=event_id, tickets=tickets)
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
    got = waitlist.positions(tickets=[("e1", t) for t in probes])
    assert got == {("e1", t): t - sum(1 for g in gone if g < t) for t in probes}


def test_a_position_at_ten_thousand_is_one_request_and_few_read_units(ddb):
    gone = list(range(1, 10_000, 97))
    for start in range(0, len(gone), 10):
        depart("e1", gone[start:start + 10])
    for ticket in (10_000, 9_999, 12_345):
        with metered() as meter:
            waitlist.position(event_id="e1", ticket=ticket)
        # The counter nodes, then the event and its lanes' blocks (none here: no such event).
        assert meter.total_requests <= 3
        assert meter.read_capacity <= 4  # one strongly consistent unit per node, one node per non-zero digit


def test_far_apart_heads_are_promoted_in_batches_that_fit_one_transaction():
    # Heads 1, 101, 201, ... each need their own level-0 node: 15 of them would not fit 100 items.
    tickets = [1 + 10_000 * n for n in range(15)]
    fitted = waitlist.fit_batch(tickets, items_per_ticket=5, fixed_items=1)
    assert 1 <= fitted < 15
    assert 1 + 5 * fitted + waitlist.departure_item_count(tickets[:fitted]) <= waitlist.MAX_TRANSACTION_ITEMS
    assert waitlist.fit_batch(list(range(1, 16)), items_per_ticket=5, fixed_items=1) == 15


# --- on DynamoDB Local, against a brute-force count -----------------------------------------------------------

def assert_positions_exact(event_id: str) -> None:
    entries = selectors.waitlist_entries(event_id=event_id)
    expected = {(event_id, int(entry.ticket)): n for n, entry in enumerate(entries, start=1)}
    got = waitlist.positions(tickets=expected)
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
            services.event_update(event_id=event_id, expected_version=int(current.version),
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
    original = waitlist.record_departures

    def counted_outside(transaction, *, event_id, tickets):
        separate = LabelledTransaction()
        original(separate, event_id=event_id, tickets=tickets)
        separate.commit()

    monkeypatch.setattr(waitlist, "record_departures", counted_outside)
    with pytest.raises(AssertionError, match="positions drifted from the entries"):
        run_scenario(seed=10)


def test_backfill_rebuilds_the_departures_made_before_the_tree(ddb):
    event = make_event(capacity=0)
    for n in range(6):
        register(event.event_id, f"w{n}")
    for user in ("w1", "w3"):
        cancel(event.event_id, user)()
    # As on an event from before the tree: the entries are gone but nothing was counted.
    for node in waitlist.WaitlistDepartures.query(Event.pk_for(event.event_id),
                                                  waitlist.WaitlistDepartures.sk.startswith("WAITLEFT#")):
        node.delete()
    with pytest.raises(AssertionError):
        assert_positions_exact(event.event_id)
    call_command("registrations_backfill", "--event", event.event_id, stdout=io.StringIO())
    assert_positions_exact(event.event_id)
    call_command("registrations_backfill", "--event", event.event_id, stdout=io.StringIO())  # twice: the same
    assert_positions_exact(event.event_id)
