"""The writes that make and end a waitlist offer, added to other services' transactions: the offer made where a
seat is freed (a cancel, a decline, an expiry, a promotion), its end where it is accepted, declined, expired or
called off (see docs/offers.md). The services that answer the student and the sweep are in ``services``."""

from __future__ import annotations

from datetime import datetime, timedelta

from registrations.events.models import EventSeats
from registrations.models import OFFERED, WAITLISTED, Registration, RegistrationClaim, WaitlistEntry
from registrations.offers.models import Offer
from registrations.write_rules import HEAD_CLAIM, HEAD_EVENT_REGISTRATION, HEAD_USER_REGISTRATION, HEAD_WAITLIST_ENTRY
from tems.outbox import outbox_message
from tems.transactions import LabelledTransaction

HEAD_OFFER = "head_offer"
OUTBOX_OFFERED = "outbox_offered"
OFFER = "offer"  # the offer a decline, an expiry or a cancel of an offered registration ends



def offer_end_for(seats: EventSeats, *, now: datetime) -> datetime | None:
    """When an offer of a seat freed now ends, or None: the head is promoted at once (the event is not in offer
    mode, or it starts before the window would end, so an offer never outlives the start)."""
    if not seats.offer_hours:
        return None
    ends_at = now + timedelta(hours=int(seats.offer_hours))
    if seats.starts_at is None or ends_at > seats.starts_at:
        return None
    return ends_at


def add_head_leaves_queue(transaction: LabelledTransaction, head: WaitlistEntry, *, status: str, shard: int,
                          suffix: str = "") -> None:
    """The waitlist head's claim takes ``status`` and a seat of ``shard``, and its entry leaves the queue, in
    ``transaction``: the part an offer and a promotion share. Both are conditioned on the entry still being
    this registration's, so a head that already left refuses the whole transaction."""
    transaction.update(
        HEAD_CLAIM + suffix, RegistrationClaim(*RegistrationClaim.key_for(head.event_id, head.user_id)),
        actions=[RegistrationClaim.status.set(status), RegistrationClaim.ticket.remove(),
                 RegistrationClaim.lane.remove(), RegistrationClaim.shard.set(shard)],
        condition=RegistrationClaim.registration_id == head.registration_id,
    )
    transaction.delete(HEAD_WAITLIST_ENTRY + suffix,
                       WaitlistEntry(*WaitlistEntry.key_for(head.event_id, int(head.ticket), int(head.lane))),
                       condition=WaitlistEntry.registration_id == head.registration_id)


def add_offer(transaction: LabelledTransaction, head: WaitlistEntry, *, now: datetime, shard: int,
              ends_at: datetime, suffix: str = "") -> None:
    """Move the waitlist head to OFFERED, holding a seat of ``shard`` until ``ends_at``: its claim, both
    registration items, its entry's delete and its Offer, in ``transaction``. The seat stays taken."""
    is_waiting = Registration.status == WAITLISTED
    transaction.save(HEAD_EVENT_REGISTRATION + suffix, Registration(
        *Registration.event_key_for(head.event_id, head.registration_id), registration_id=head.registration_id,
        event_id=head.event_id, user_id=head.user_id, user_name=head.user_name, status=OFFERED,
        created_at=head.created_at, shard=shard, offer_ends_at=ends_at, gsi1pk=head.gsi1pk, gsi1sk=head.gsi1sk,
        answers=head.answers))
    transaction.update(HEAD_USER_REGISTRATION + suffix, Registration(*Registration.user_key_for(head.user_id,
                                                                                     head.registration_id)),
                       actions=[Registration.status.set(OFFERED), Registration.ticket.remove(),
                                Registration.lane.remove(), Registration.shard.set(shard),
                                Registration.offer_ends_at.set(ends_at)],
                       condition=Registration.pk.exists() & is_waiting)
    add_head_leaves_queue(transaction, head, status=OFFERED, shard=shard, suffix=suffix)
    # One offer per registration ever: a second writer of the same offer fails here.
    transaction.save(HEAD_OFFER + suffix, Offer(
        *Offer.key_for(head.user_id, head.registration_id), registration_id=head.registration_id,
        event_id=head.event_id, user_id=head.user_id, state=OFFERED, shard=shard, offered_at=now, ends_at=ends_at,
        gsi1pk=Offer.COLLECTION, gsi1sk=Offer.listing_key(ends_at, head.registration_id),
    ), condition=Offer.pk.does_not_exist())
    transaction.save(OUTBOX_OFFERED + suffix, outbox_message(message_type="SeatOffered", now=now, payload={
        "registration_id": head.registration_id, "event_id": head.event_id, "user": head.user_id,
        "ends_at": ends_at.isoformat(),
    }))


def add_offer_end(transaction: LabelledTransaction, *, user_id: str, registration_id: str, state: str,
                  now: datetime) -> None:
    """End the registration's offer as ``state`` (accepted, declined, expired), under the condition that it is
    still offered and, for accepted or expired, on the right side of its end by the clock value ``now``: the
    clock in the write's own condition, so no sweep is needed to refuse a late accept."""
    condition = Offer.state == OFFERED
    if state == Offer.ACCEPTED:
        condition &= Offer.ends_at > now
    elif state in (Offer.EXPIRED, Offer.CALLED_OFF):
        condition &= Offer.ends_at <= now
    transaction.update(OFFER, Offer(*Offer.key_for(user_id, registration_id)), actions=[
        Offer.state.set(state), Offer.ended_at.set(now), Offer.gsi1pk.remove(), Offer.gsi1sk.remove(),
        Offer.expires_at.set(now + timedelta(days=Offer.KEEP_ENDED_DAYS)),
    ], condition=condition, return_old_on_failure=True)
