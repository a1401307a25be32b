"""Promotion from the waiting list: the head takes a freed seat, under conditions that the read is still true."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from registrations import selectors, waitlist
from registrations.models import CONFIRMED, WAITLISTED, EventSeats, Registration, RegistrationClaim, WaitlistEntry
from registrations.services.common import EVENT_SEATS, _busy, conflict_backoff
from tems.clock import utcnow
from tems.outbox import outbox_message
from tems.transactions import LabelledTransaction, TransactionCancelled

# --- promotion ---------------------------------------------------------------------------------------------
#
# Promotion reads the head of the waiting list, then writes under conditions that the read is still true (the
# head's entry still exists; with no head, that nobody has joined since). Tickets only grow, so an entry that
# still exists is still the head, and a stale read costs a retry, never a wrong promotion.

HEAD_CLAIM = "head_claim"
HEAD_USER_REGISTRATION = "head_user_registration"
HEAD_EVENT_REGISTRATION = "head_event_registration"
HEAD_WAITLIST_ENTRY = "head_waitlist_entry"
OUTBOX_PROMOTED = "outbox_promoted"


# Items per promotion in a transaction: claim, two registration copies, waitlist entry, outbox message. With
# the event's counters that is 5 * 15 + 1 = 76 of DynamoDB's 100 items per transaction.
PROMOTION_BATCH = 15
# Rounds in a row that promote nobody (another promoter, canceller or editor got in between each time) before
# a promotion gives up for now; progress resets it, so a long waiting list is never cut short.
PROMOTION_STALE_ROUNDS = 16


def _add_promotion(transaction: LabelledTransaction, head: WaitlistEntry, *, now: datetime,
                   suffix: str = "") -> None:
    """Move the waitlist head to confirmed: its claim, both registration items and its entry, in ``transaction``."""
    is_waiting = Registration.status == WAITLISTED
    for label, model in (
        (HEAD_USER_REGISTRATION, Registration(*Registration.user_key_for(head.user_id, head.registration_id))),
        (HEAD_EVENT_REGISTRATION, Registration(*Registration.event_key_for(head.event_id, head.registration_id))),
    ):
        transaction.update(label + suffix, model, actions=[
            Registration.status.set(CONFIRMED), Registration.ticket.remove(), Registration.promoted_at.set(now),
        ], condition=Registration.pk.exists() & is_waiting)
    transaction.update(
        HEAD_CLAIM + suffix, RegistrationClaim(*RegistrationClaim.key_for(head.event_id, head.user_id)),
        actions=[RegistrationClaim.status.set(CONFIRMED), RegistrationClaim.ticket.remove()],
        condition=RegistrationClaim.registration_id == head.registration_id,
    )
    transaction.delete(HEAD_WAITLIST_ENTRY + suffix,
                       WaitlistEntry(*WaitlistEntry.key_for(head.event_id, int(head.ticket))),
                       condition=WaitlistEntry.registration_id == head.registration_id)
    transaction.save(OUTBOX_PROMOTED + suffix, outbox_message(message_type="RegistrationPromoted", now=now, payload={
        "registration_id": head.registration_id, "event_id": head.event_id, "user": head.user_id,
        "status": CONFIRMED,
    }))


def waitlist_promote(*, event_id: str, now: datetime | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> int:
    """Fill the event's free seats from the head of its waiting list until no seat is free or nobody waits.

    Idempotent and safe to run anywhere at any time (after an edit, from the outbox relay, from a registration
    that saw free seats while people wait, several at once): each round reads the counters and the first
    waiting entries, then promotes up to ``PROMOTION_BATCH`` of them in one transaction under the conditions
    that the capacity is still what was read and that the seats are still free, and that each entry is still
    waiting. So it can never overbook or skip the queue, and a crash between two rounds leaves a consistent
    state that the next run continues from. No cap on how many it promotes; it gives up only after
    ``PROMOTION_STALE_ROUNDS`` rounds in a row without progress (RegistrationError 'busy'). Returns how many
    registrations this call promoted.
    """
    now = now or utcnow()
    promoted = stale = 0
    conflicts = conflict_backoff(sleep)
    while True:
        try:
            seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return promoted
        capacity, taken = int(seats.capacity), int(seats.registered_count or 0)
        free = capacity - taken
        if free <= 0 or not int(seats.waitlist_count or 0):
            return promoted
        heads = selectors.waitlist_heads(event_id=event_id, limit=min(free, PROMOTION_BATCH))
        if not heads:
            return promoted
        # Their departure counters share the transaction's 100 items: far apart tickets need more of them.
        heads = heads[:waitlist.fit_batch([int(h.ticket) for h in heads], items_per_ticket=5, fixed_items=1)]
        transaction = LabelledTransaction()
        for n, head in enumerate(heads):
            _add_promotion(transaction, head, now=now, suffix=f"_{n}")
        waitlist.record_departures(transaction, event_id=event_id, tickets=[int(h.ticket) for h in heads])
        transaction.update(
            EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
            actions=[EventSeats.registered_count.add(len(heads)), EventSeats.waitlist_count.add(-len(heads))],
            condition=(EventSeats.capacity == capacity) & (EventSeats.registered_count <= capacity - len(heads)),
        )
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            if cancelled.only_conflicts:
                conflicts.pause()
            else:
                stale += 1  # the counters or the queue moved since the read: look again
                if stale >= PROMOTION_STALE_ROUNDS:
                    raise _busy(
                        "The waiting list of this event is changing fast; promotion will finish later.") from None
            continue
        promoted += len(heads)
        stale = 0
