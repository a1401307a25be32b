"""``event_upgrade`` moving a live waiting list into the lanes while students cancel, join and staff raise the
capacity, on DynamoDB Local: the students waiting from before the lanes keep their place (nobody behind them is
promoted first), registrations confirmed before the shards are cancelled through the upgrade, and every
invariant holds. The same race with the fence left out of cancels and promotions (``current_shape``) must
promote someone behind them, or the test proves nothing."""

from __future__ import annotations

import math
import threading

import pytest

from registrations import selectors, services
from registrations.models import CONFIRMED, CURRENT_LAYOUT, WAITLISTED, EventSeats, WaitlistEntry
from registrations.services import cancel as cancel_service
from registrations.services import promotion as promotion_service
from registrations.services import upgrade as upgrade_service
from registrations.services.upgrade import event_upgrade
from tems.outbox import OutboxMessage, outbox_relay
from tests.helpers import assert_invariants_clean
from tests.race import race
from tests.registrations.helpers import (
    as_before_the_lanes,
    as_confirmed_before_the_shards,
    make_event,
    register,
    spaced_clock,
)

SEATED = 6
EARLY = 6


@pytest.fixture
def old_waiting_list(ddb, settings) -> tuple[str, dict[str, int]]:
    """A full event of three shards: six students waiting from before the lanes (bare entries in the event's
    partition), one who joined a lane since, and two of the seated naming no shard. Returns the event and the
    waiting registrations' tickets."""
    settings.SEATS_PER_SHARD = 2
    event_id = make_event(capacity=SEATED).event_id
    for n in range(SEATED):
        register(event_id, f"seated{n}")
    clock = spaced_clock()  # tickets in the order of the joins: those from before the lanes first
    for n in range(EARLY):
        register(event_id, f"early{n}", clock=clock)
    for entry in selectors.waitlist_entries(event_id=event_id):
        as_before_the_lanes(entry)
    register(event_id, "later", clock=clock)
    for user in ("seated0", "seated1"):
        as_confirmed_before_the_shards(event_id, user)
    tickets = {entry.registration_id: int(entry.ticket) for entry in WaitlistEntry.query(
        WaitlistEntry.legacy_pk_for(event_id), WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX))}
    tickets.update({entry.registration_id: int(entry.ticket)
                    for entry in selectors.waitlist_entries(event_id=event_id)})
    assert len(tickets) == EARLY + 1
    return event_id, tickets


def cancel(event_id: str, user_id: str):
    claim = selectors.claim_get(event_id=event_id, user_id=user_id)
    return lambda: services.registration_cancel(user_id=user_id, registration_id=claim.registration_id)


def raise_capacity(event_id: str, by: int):
    event = selectors.event_get(event_id=event_id)

    def edit():
        return services.event_update(event_id=event_id, expected_version=int(event.version), title=event.title,
                                     description=event.description, location=event.location,
                                     starts_at=event.starts_at, capacity=int(event.capacity) + by, updated_by="staff")
    return edit


def overtaken(event_id: str, tickets: dict[str, int]) -> list[str]:
    """Waiting students with a smaller ticket than someone promoted (a newcomer's ticket is after them all)."""
    promoted = [message.data["registration_id"] for message in OutboxMessage.scan()
                if message.message_type == "RegistrationPromoted"]
    waiting = [int(entry.ticket) for entry in selectors.waitlist_entries(event_id=event_id)]
    return [f"ticket {ticket} still waits behind promoted ticket {tickets.get(rid, 'new')}"
            for rid in promoted for ticket in waiting if ticket < tickets.get(rid, math.inf)]


def run_race(event_id: str, monkeypatch) -> None:
    """The race, with the one interleaving that matters made certain: the upgrade's move of the entries from
    before the lanes waits until a cancel or promotion has read the head from the lanes."""
    heads_read = threading.Event()
    read_heads, move = selectors.waitlist_heads, upgrade_service.entries_into_lanes

    def reading_heads(**kwargs):
        heads = read_heads(**kwargs)
        heads_read.set()
        return heads

    def moving_late(**kwargs):
        heads_read.wait(timeout=30)
        return move(**kwargs)

    monkeypatch.setattr(selectors, "waitlist_heads", reading_heads)
    monkeypatch.setattr(upgrade_service, "entries_into_lanes", moving_late)
    calls = [lambda: event_upgrade(event_id=event_id), lambda: event_upgrade(event_id=event_id),
             *(cancel(event_id, f"seated{n}") for n in range(3)), cancel(event_id, "early3"),
             raise_capacity(event_id, 1), *(lambda n=n: register(event_id, f"new{n}") for n in range(3))]
    race(calls)
    outbox_relay(handlers={services.PROMOTION_REQUESTED: services.waitlist_promotion_requested})


def test_the_upgrade_racing_cancels_joins_and_a_raise_keeps_the_old_waiting_list_first(old_waiting_list, monkeypatch):
    event_id, tickets = old_waiting_list
    run_race(event_id, monkeypatch)
    assert overtaken(event_id, tickets) == []
    seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    assert not int(seats.waitlist_count or 0) and seats.giving_shards is None
    for user in ("seated0", "seated1", "seated2", "early3"):
        assert selectors.claim_get(event_id=event_id, user_id=user) is None
    # Five of the six from before the lanes waited ahead of everyone; four seats came free (three cancels, a
    # raise of one): the first four of them in ticket order have them, everyone behind still waits.
    claims = {user: selectors.claim_get(event_id=event_id, user_id=user)
              for user in ("early0", "early1", "early2", "early4", "early5", "later", "new0", "new1", "new2")}
    by_ticket = sorted((user for user in claims if user.startswith("early")),
                       key=lambda user: tickets[claims[user].registration_id])
    assert {user: claim.status for user, claim in claims.items()} == {
        **dict.fromkeys(by_ticket[:4], CONFIRMED), **dict.fromkeys((*by_ticket[4:], "later"), WAITLISTED),
        **dict.fromkeys(("new0", "new1", "new2"), WAITLISTED)}
    assert_invariants_clean()


def test_cancels_and_promotions_without_the_fence_pass_the_old_waiting_list_over(old_waiting_list, monkeypatch):
    """Broken on purpose: cancels and promotions check only the layout on the event's item, so one that reads
    the head from the lanes before the upgrade moved the older entries promotes someone behind them."""
    monkeypatch.setattr(cancel_service, "current_shape", lambda: EventSeats.layout == CURRENT_LAYOUT)
    monkeypatch.setattr(promotion_service, "no_older_shape", lambda: EventSeats.pk.exists())
    event_id, tickets = old_waiting_list
    run_race(event_id, monkeypatch)
    assert overtaken(event_id, tickets) != []
