"""Promotion from the waiting list: the head takes a freed seat, under conditions that the read is still true."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from registrations import selectors
from registrations.events.models import EventSeats
from registrations.models import CONFIRMED, WAITLISTED, Registration, WaitlistEntry
from registrations.offers.offer_writes import HEAD_OFFER, add_head_leaves_queue, add_offer, offer_end_for
from registrations.reports.counting import count_head_left
from registrations.seating import marks, positions, shards
from registrations.seating.gate import CLOSED, RAISED, add_gate, lane_open
from registrations.seating.models import SeatGate, SeatShard, WaitlistQueue
from registrations.seating.shards import add_reslice, planned_sizes
from registrations.write_rules import (
    EVENT_SEATS,
    HEAD_CLAIM,
    HEAD_EVENT_REGISTRATION,
    HEAD_USER_REGISTRATION,
    HEAD_WAITLIST_ENTRY,
    OUTBOX_PROMOTED,
    QUEUE,
    SEAT,
    busy_error,
    conflict_backoff,
)
from tems.clock import utcnow
from tems.outbox import outbox_message
from tems.transactions import LabelledTransaction, TransactionCancelled

logger = logging.getLogger(__name__)

# --- promotion ---------------------------------------------------------------------------------------------
#
# Promotion reads the head of the waiting list, then writes under conditions that the read is still true (the
# head's entry still exists; with no head, that nobody has joined since). Tickets only grow, so an entry that
# still exists is still the head, and a stale read costs a retry, never a wrong promotion.



# Items per promotion in a transaction: claim, two registration copies, waitlist entry, outbox message. With
# the event's counters, the queue, one shard and the report's day item (all heads of a round count on one) that
# is 5 * 15 + 4 = 79 of DynamoDB's 100 items per transaction.
PROMOTION_BATCH = 15
# Rounds in a row that promote nobody (another promoter, canceller or editor got in between each time) before
# a promotion gives up for now; progress resets it, so a long waiting list is never cut short.
PROMOTION_STALE_ROUNDS = 16


class SeatWrites:
    """What one transaction does to an event's item and its shards, gathered per item: a transaction may touch
    an item once, and a promotion or a cancel can move one shard as a seat and as a lane at the same time."""

    def __init__(self, event_id: str) -> None:
        self.event_id = event_id
        self.shards: dict[int, tuple[list, Any]] = {}
        self.event_actions: list = []
        self.event_condition: Any = None
        self.queue_left = 0  # tickets that left, for the queue's ``left`` (a join's answer subtracts it)

    def shard(self, shard: int, *, actions: Sequence = (), condition: Any = None) -> None:
        known, known_condition = self.shards.get(int(shard), ([], None))
        self.shards[int(shard)] = ([*known, *actions], _both(known_condition, condition))

    def event(self, *, actions: Sequence = (), condition: Any = None) -> None:
        self.event_actions += actions
        self.event_condition = _both(self.event_condition, condition)

    def depart(self, transaction: LabelledTransaction, entries: Sequence[WaitlistEntry]) -> None:
        """``entries`` leave the waiting list: their lanes' ``waiting`` and the queue's ``left`` move with the
        departure counters (the caller deletes the entries in the same transaction)."""
        positions.record_departures(transaction, event_id=self.event_id, tickets=[int(e.ticket) for e in entries])
        for lane, gone in sorted(Counter(int(entry.lane) for entry in entries).items()):
            self.shard(lane, actions=[SeatShard.waiting.add(-gone)], condition=SeatShard.waiting >= gone)
        self.queue_left += len(entries)

    def add_to(self, transaction: LabelledTransaction) -> None:
        if self.queue_left:
            transaction.update(QUEUE, WaitlistQueue(*WaitlistQueue.key_for(self.event_id)),
                               actions=[WaitlistQueue.left.add(self.queue_left)])
        for shard, (actions, condition) in sorted(self.shards.items()):
            model = SeatShard(*SeatShard.key_for(self.event_id, shard))
            condition = _both(SeatShard.pk.exists(), condition)
            if actions:
                transaction.update(f"{SEAT}_{shard}", model, actions=actions, condition=condition)
            else:
                transaction.condition_check(f"{SEAT}_{shard}", SeatShard, *SeatShard.key_for(self.event_id, shard),
                                            condition=condition)
        if self.event_actions:
            transaction.update(EVENT_SEATS, EventSeats(*EventSeats.key_for(self.event_id)),
                               actions=self.event_actions, condition=_both(EventSeats.pk.exists(),
                                                                           self.event_condition),
                               return_old_on_failure=True)
        elif self.event_condition is not None:
            transaction.condition_check(EVENT_SEATS, EventSeats, *EventSeats.key_for(self.event_id),
                                        condition=_both(EventSeats.pk.exists(), self.event_condition),
                                        return_old_on_failure=True)


def _both(first: Any, second: Any) -> Any:
    if first is None:
        return second
    return first if second is None else first & second


def add_promotion(transaction: LabelledTransaction, head: WaitlistEntry, *, now: datetime, shard: int,
                  suffix: str = "") -> None:
    """Move the waitlist head to confirmed, holding a seat of ``shard``: its claim, both registration items and its
    entry, in ``transaction``. The entry is the registration's event-side copy: the promotion writes the
    confirmed copy from it."""
    # No condition of its own: the entry's delete below (still this registration's) is what admits it once.
    # The seat's shard, so the promoted registration's cancel frees the shard it holds a seat in.
    transaction.save(HEAD_EVENT_REGISTRATION + suffix, Registration(
        *Registration.event_key_for(head.event_id, head.registration_id), registration_id=head.registration_id,
        event_id=head.event_id, user_id=head.user_id, user_name=head.user_name, status=CONFIRMED,
        created_at=head.created_at, shard=shard, promoted_at=now, gsi1pk=head.gsi1pk, gsi1sk=head.gsi1sk,
        answers=head.answers))
    transaction.update(
        HEAD_USER_REGISTRATION + suffix, Registration(*Registration.user_key_for(head.user_id, head.registration_id)),
        actions=[Registration.status.set(CONFIRMED), Registration.ticket.remove(), Registration.lane.remove(),
                 Registration.promoted_at.set(now), Registration.shard.set(shard)],
        condition=Registration.pk.exists() & (Registration.status == WAITLISTED))
    add_head_leaves_queue(transaction, head, status=CONFIRMED, shard=shard, suffix=suffix)
    transaction.save(OUTBOX_PROMOTED + suffix, outbox_message(message_type="RegistrationPromoted", now=now, payload={
        "registration_id": head.registration_id, "event_id": head.event_id, "user": head.user_id,
        "status": CONFIRMED,
    }))


def head_left(cancelled: TransactionCancelled, suffix: str = "") -> bool:
    """Whether a refused promotion or offer (``add_to_head``) was refused because its head had already left the
    waiting list: each of these conditions holds for as long as the entry waits (its entry is deleted in the
    transaction that changes its registration, claim or offer), so any of them failing means it is gone."""
    return any(cancelled.failed(label + suffix)
               for label in (HEAD_WAITLIST_ENTRY, HEAD_USER_REGISTRATION, HEAD_CLAIM, HEAD_OFFER))


def add_to_head(transaction: LabelledTransaction, head: WaitlistEntry, *, now: datetime, shard: int,
                offer_ends_at: datetime | None, suffix: str = "") -> None:
    """The freed seat of ``shard`` to the waitlist head: an offer until ``offer_ends_at``, or (None) the seat
    itself."""
    if offer_ends_at is None:
        add_promotion(transaction, head, now=now, shard=shard, suffix=suffix)
    else:
        add_offer(transaction, head, now=now, shard=shard, ends_at=offer_ends_at, suffix=suffix)
    count_head_left(transaction, event_id=head.event_id, shard=shard, now=now, offered=offer_ends_at is not None)


class PromotionRounds:
    """The bounds of one promotion's rounds: a round that met another transaction pauses (at most MAX_CONFLICTS
    times, then 'busy'); a round whose read went stale (another promoter, canceller or editor got in between)
    counts, and PROMOTION_STALE_ROUNDS of them in a row give up for now ('busy'); progress starts that count
    again, so a long waiting list is never cut short."""

    def __init__(self, sleep: Callable[[float], None], *, event_id: str) -> None:
        self.conflicts = conflict_backoff(sleep)
        self.stale_in_a_row = 0
        self.event_id = event_id

    def commit(self, transaction: LabelledTransaction) -> bool:
        """Send the round's transaction: True if it committed; False, after its pause or count, if not."""
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            if cancelled.only_conflicts:
                self.conflicts.pause()
            else:
                self.stale()  # the counters or the queue moved since the read: look again
            return False
        return True

    def stale(self) -> None:
        self.stale_in_a_row += 1
        if self.stale_in_a_row >= PROMOTION_STALE_ROUNDS:
            raise busy_error("The waiting list of this event is changing fast; promotion will finish later.")

    def progressed(self) -> None:
        self.stale_in_a_row = 0


def waitlist_promote(*, event_id: str, now: datetime | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> int:
    """Hand the event's seats not yet in any shard (a raised capacity) to the head of its waiting list, until
    none is left or nobody waits; then slice what is left into the shards for newcomers.

    Idempotent and safe to run anywhere at any time (after an edit, from the outbox relay, from a registration
    that saw unsliced seats, several at once): each round reads the counters and the first waiting entries,
    then promotes up to ``PROMOTION_BATCH`` of them in one transaction that grows one shard's slice and its
    taken seats by as many, under the conditions that the capacity and the sliced seats are still what was read
    and that each entry is still waiting. So it can never overbook or skip the queue, and a crash between two
    rounds leaves a consistent state that the next run continues from. No cap on how many it promotes; it
    gives up only after ``PROMOTION_STALE_ROUNDS`` rounds in a row without progress (RegistrationError 'busy').
    A cancelled event promotes nobody: every write here is conditioned on ``cancelled_at`` being absent.
    Returns how many registrations this call promoted.
    """
    now = now or utcnow()
    promoted = 0
    rounds = PromotionRounds(sleep, event_id=event_id)
    while True:
        seats, gate, lanes = selectors.waitlist_lanes_and_gate(event_id=event_id)
        if seats is None or seats.cancelled_at is not None:
            # A cancelled event promotes nobody: its writes below are conditioned on it not being cancelled, so
            # this read only spares rounds that would be refused.
            return promoted
        if gate is None:
            return promoted  # the gate is born with the event: it is being deleted (a lab scratch event)
        capacity, sliced = int(seats.capacity), int(seats.sliced)
        count = int(seats.seat_shards)
        waiting = sum(int(lane.waiting or 0) for lane in lanes)
        unsliced = capacity - sliced
        # Done when every seat is in a shard, and (nobody waiting) there are as many shards as the rule asks:
        # seats promoted into one shard are resliced over all of them for the next free seats.
        raised = int(gate.state) == RAISED or any(int(lane.gate or 0) == RAISED for lane in lanes)
        if unsliced <= 0 and waiting and raised:
            # Every seat of the raise is handed out: newcomers may join behind the rest again. A lane that has
            # not copied the gate yet stays open (and must still be: a copy of RAISED landing now would be missed).
            transaction = LabelledTransaction()
            writes = SeatWrites(event_id)
            for lane in lanes[:shards.lane_count(len(lanes))]:
                if lane.gate_closed:
                    writes.shard(int(lane.shard), actions=[SeatShard.gate.set(CLOSED)],
                                 condition=SeatShard.gate >= CLOSED)
                else:
                    writes.shard(int(lane.shard), condition=lane_open())
            add_gate(transaction, event_id=event_id, actions=[SeatGate.state.set(CLOSED)],
                     condition=(SeatGate.state >= CLOSED) & (SeatGate.opened == int(gate.opened)))
            writes.event(condition=(EventSeats.capacity == capacity) & (EventSeats.sliced == sliced)
                         & EventSeats.cancelled_at.does_not_exist())
            writes.add_to(transaction)
            rounds.commit(transaction)
            continue
        if unsliced <= 0 and (waiting or count >= shards.grown_count(count, capacity)):
            return promoted
        unchanged = ((EventSeats.capacity == capacity) & (EventSeats.sliced == sliced)
                     & (EventSeats.seat_shards == count) & EventSeats.cancelled_at.does_not_exist())
        transaction = LabelledTransaction()
        writes = SeatWrites(event_id)
        heads = (selectors.waitlist_heads(event_id=event_id, limit=min(unsliced, PROMOTION_BATCH),
                                          lanes=(seats, lanes)) if waiting and unsliced > 0 else [])
        if heads:
            # In offer mode the raised seats are offered like freed ones: held for the head, not given.
            offer_ends_at = offer_end_for(seats, now=now)
            # Their departure counters share the transaction's 100 items: far apart tickets need more of them.
            # Fixed: the event, the queue, the shard and the report's day item.
            heads = heads[:positions.fit_batch([int(h.ticket) for h in heads], fixed_items=4,
                                               items_per_ticket=6 if offer_ends_at is None else 7)]
            # The new seats go to one shard per round, turn by turn, so the slices stay about even.
            shard = sliced % shards.lane_count(count)
            for n, head in enumerate(heads):
                add_to_head(transaction, head, now=now, shard=shard, offer_ends_at=offer_ends_at, suffix=f"_{n}")
            writes.depart(transaction, heads)
            writes.shard(shard, actions=[SeatShard.capacity.add(len(heads)), SeatShard.taken.add(len(heads))])
            writes.event(actions=[EventSeats.sliced.add(len(heads))], condition=unchanged)
            writes.add_to(transaction)
        else:
            # Nobody waits: the rest of the raise goes to the shards (more of them if the capacity asks for it),
            # under the condition that nobody joined the waiting list since; the gate opens again with them, the
            # lanes past the inner ones first.
            if not marks.reopen_outer_lanes(event_id=event_id, count=count, gate=gate):
                rounds.stale()
                continue
            sizes = planned_sizes(target=capacity, count=count, shards_read=lanes)
            add_reslice(transaction, event_id=event_id, shards_read=lanes, sizes=sizes, starts_at=seats.starts_at,
                        reopen=True, gate=gate)
            transaction.update(
                EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
                actions=[EventSeats.sliced.set(capacity), EventSeats.seat_shards.set(len(sizes))],
                condition=unchanged, return_old_on_failure=True,
            )
        if rounds.commit(transaction):
            promoted += len(heads)
            rounds.progressed()


def waitlist_promote_best_effort(event_id: str) -> None:
    """``waitlist_promote``, for a request that finds a promotion pending and must not fail because of it: the
    outbox message of the edit that freed the seats finishes it if this call cannot."""
    try:
        waitlist_promote(event_id=event_id)
    except Exception:  # noqa: BLE001 - logged; the outbox relay retries the promotion
        logger.warning("could not finish the promotion of event %s", event_id, exc_info=True)
