"""Waitlist offers: accepting, declining and the expiry of a seat offered to the head of the waiting list.

The offer itself is made where the seat is freed, in that transaction (``add_offer`` in services/promotion.py,
called by the cancel). Every end of an offer is one transaction conditioned on the Offer still ``offered``
(``add_offer_end``), so of any number of accepts, declines and sweeps exactly one ends it: the accept keeps the
seat (the registration becomes confirmed), a decline or the expiry passes it on like a cancel (to the next in
line, or back to the shard), in the same transaction.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from registrations.errors import RegistrationError, cancelled_in_image, event_cancelled_error
from registrations.events.models import EventSeats
from registrations.models import CONFIRMED, OFFERED, Registration, RegistrationClaim
from registrations.offers.models import Offer
from registrations.offers.offer_writes import OFFER, add_offer_end
from registrations.reports.counting import count_accepted
from registrations.services.cancel import FreedSeat, FreeingCommit, cancel_transaction, freed_seat
from registrations.write_rules import (
    CLAIM,
    EVENT_REGISTRATION,
    EVENT_SEATS,
    IDEMPOTENCY,
    OUTBOX,
    USER_REGISTRATION,
    StoredOutcome,
    busy_error,
    commit_tap,
    conflict_backoff,
    remember_outcome,
    stored_answer,
)
from tems.clock import utcnow
from tems.idempotency import StoredResponse, add_completed_record
from tems.outbox import outbox_message
from tems.transactions import UNKNOWN_OUTCOME, LabelledTransaction, commit_round

logger = logging.getLogger(__name__)

# Rounds of one accept, decline or expiry before 'busy': a decline meets the same contention as a cancel.
OFFER_MAX_ROUNDS = 16
# Expired offers one sweep hands on; the rest wait for the next pass a minute later.
SWEEP_LIMIT = 500


def offer_response(offer: Offer, state: str) -> StoredResponse:
    """The answer of an accept or a decline (and what its key replays)."""
    return StoredResponse.json({"offer_id": offer.registration_id, "registration_id": offer.registration_id,
                                "event_id": offer.event_id, "state": state,
                                "status": CONFIRMED if state == Offer.ACCEPTED else "cancelled"}, status=200)


def _offer_get(*, user_id: str, registration_id: str) -> Offer:
    try:
        return Offer.get(*Offer.key_for(user_id, registration_id), consistent_read=True)
    except Offer.DoesNotExist:
        raise RegistrationError("not_found", f"You have no offer with id {registration_id!r}.") from None


def _refusal(offer: Offer, *, wanted: str, now: datetime) -> RegistrationError | None:
    """Why an offer that is not ``offered`` by ``now`` cannot take ``wanted``; None: it already ended as wanted
    (the loser of a race gets the winner's result)."""
    if offer.state == wanted:
        return None
    if offer.state == Offer.EXPIRED or (offer.state == OFFERED and offer.ends_at <= now):
        return RegistrationError("offer_expired", "This offer has run out: the seat went to the next in line.")
    if offer.state == Offer.ACCEPTED:
        return RegistrationError("conflict", "You accepted this offer: the seat is yours. Cancel the registration "
                                             "on My registrations if you can no longer come.")
    return RegistrationError("conflict", "You declined this offer: the seat went to the next in line.")


def offer_accept(*, user_id: str, registration_id: str, idempotency_key: str, fingerprint: str,
                 now: datetime | None = None, sleep: Callable[[float], None] = time.sleep) -> StoredOutcome:
    """Take the offered seat once per (user, key): one transaction turns the offer accepted (under ``offered``
    and ``ends_at > now``, the event not cancelled and not started) and the registration confirmed, with the tap's
    record and the mail's outbox message.

    Any number of accepts make one registration; a loser answers the winner's 200. Raises RegistrationError:
    'not_found' (no such offer of this user), 'offer_expired' (409: its time ran out, the seat handed on before
    the answer; or the event started, its start moved before the offer's end), 'conflict' (declined before),
    'unprocessable' (key reused), 'busy'.
    """
    now = now or utcnow()
    offer = _offer_get(user_id=user_id, registration_id=registration_id)
    response = offer_response(offer, Offer.ACCEPTED)
    conflicts = conflict_backoff(sleep)
    for _ in range(OFFER_MAX_ROUNDS):
        cancelled = commit_tap(_accept_transaction(offer, now=now), user_id=user_id, key=idempotency_key,
                               fingerprint=fingerprint, response=response, now=now)
        if isinstance(cancelled, StoredOutcome):
            return cancelled
        if cancelled is UNKNOWN_OUTCOME:
            conflicts.pause()  # the next round's conditions find out (the record replays)
            continue
        if cancelled is not None:
            if cancelled.failed(EVENT_SEATS):
                if when := cancelled_in_image(cancelled.reasons[EVENT_SEATS].raw_item):
                    raise event_cancelled_error(when) from None
                raise RegistrationError("offer_expired", "This event has started: its offers ended with it.") from None
            if cancelled.failed(OFFER):
                if not cancelled.reasons[OFFER].raw_item:
                    raise RegistrationError("not_found", f"You have no offer with id {registration_id!r}.") from None
                ended = Offer.from_raw_data(cancelled.reasons[OFFER].raw_item)
                refusal = _refusal(ended, wanted=Offer.ACCEPTED, now=now)
                if refusal is None:
                    return _remember(user_id=user_id, key=(idempotency_key, fingerprint), response=response,
                                     now=now, sleep=sleep)
                if refusal.code == "offer_expired" and ended.state == OFFERED:
                    _expire_best_effort(ended, now=now)  # the seat goes to the next at once, not at the sweep
                raise refusal from None
            if cancelled.only_conflicts:
                conflicts.pause()
            continue
        return StoredOutcome(response)
    raise busy_error("This offer is being answered right now; try again in a moment.")


def _accept_transaction(offer: Offer, *, now: datetime) -> LabelledTransaction:
    event_id, user_id, registration_id = offer.event_id, offer.user_id, offer.registration_id
    transaction = LabelledTransaction()
    add_offer_end(transaction, user_id=user_id, registration_id=registration_id, state=Offer.ACCEPTED, now=now)
    count_accepted(transaction, event_id=event_id, shard=int(offer.shard), offered_at=offer.offered_at, now=now)
    transaction.update(CLAIM, RegistrationClaim(*RegistrationClaim.key_for(event_id, user_id)),
                       actions=[RegistrationClaim.status.set(CONFIRMED)],
                       condition=(RegistrationClaim.registration_id == registration_id)
                       & (RegistrationClaim.status == OFFERED))
    for label, key in ((USER_REGISTRATION, Registration.user_key_for(user_id, registration_id)),
                       (EVENT_REGISTRATION, Registration.event_key_for(event_id, registration_id))):
        transaction.update(label, Registration(*key), actions=[
            Registration.status.set(CONFIRMED), Registration.offer_ends_at.remove(),
            Registration.promoted_at.set(now)], condition=Registration.status == OFFERED)
    transaction.save(OUTBOX, outbox_message(message_type="RegistrationPromoted", now=now, payload={
        "registration_id": registration_id, "event_id": event_id, "user": user_id, "status": CONFIRMED,
    }))
    transaction.condition_check(EVENT_SEATS, EventSeats, *EventSeats.key_for(event_id), condition=still_admits(now),
                                return_old_on_failure=True)
    return transaction


def still_admits(now: datetime) -> Any:
    """The event's condition on an accept: not cancelled (its cancellation marks the event in its own transaction)
    and not started by ``now``, even for an offer made before the start was moved earlier."""
    return EventSeats.cancelled_at.does_not_exist() & (EventSeats.starts_at > now)


def offer_decline(*, user_id: str, registration_id: str, idempotency_key: str, fingerprint: str,
                  now: datetime | None = None, sleep: Callable[[float], None] = time.sleep) -> StoredOutcome:
    """Give the offered seat up once per (user, key): the offer declined, the registration cancelled and the
    seat passed to the next in line (or back to its shard) in one transaction. A decline after the offer's end
    that nothing swept yet still passes the seat on. Raises RegistrationError: 'not_found', 'offer_expired',
    'conflict' (accepted before: cancel the registration instead), 'unprocessable', 'busy'.
    """
    now = now or utcnow()
    key = (idempotency_key, fingerprint)
    conflicts = conflict_backoff(sleep)
    for _ in range(OFFER_MAX_ROUNDS):
        offer = _offer_get(user_id=user_id, registration_id=registration_id)
        response = offer_response(offer, Offer.DECLINED)
        if offer.state != OFFERED:
            refusal = _refusal(offer, wanted=Offer.DECLINED, now=now)
            if refusal is not None:
                raise refusal
            return _remember(user_id=user_id, key=key, response=response, now=now, sleep=sleep)
        outcome = _pass_on(offer, state=Offer.DECLINED, now=now, key=key, response=response)
        if outcome is not None:
            return outcome
        conflicts.pause()
    raise busy_error("This offer is being answered right now; try again in a moment.")


def offer_expire(*, user_id: str, registration_id: str, now: datetime | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> bool:
    """Hand an offer whose end has passed on to the next in line, exactly once however many run it: True if
    this call ended it, False if it had not ended by ``now`` or something else ended it. Raises 'busy'."""
    now = now or utcnow()
    conflicts = conflict_backoff(sleep)
    for _ in range(OFFER_MAX_ROUNDS):
        try:
            offer = _offer_get(user_id=user_id, registration_id=registration_id)
        except RegistrationError:
            return False
        if offer.state != OFFERED or offer.ends_at > now:
            return False
        if _pass_on(offer, state=Offer.EXPIRED, now=now, response=offer_response(offer, Offer.EXPIRED)) is not None:
            return True
        conflicts.pause()
    raise busy_error("This offer is being handed on right now.")


def _pass_on(offer: Offer, *, state: str, now: datetime, response: StoredResponse,
             key: tuple[str, str] | None = None) -> StoredOutcome | None:
    """One round of ending ``offer`` as ``state`` with its seat passed on; None: read again (a read went stale,
    or a conflict: the caller pauses). A refusal of the offer's own condition is read again by the caller."""
    try:
        registration = Registration.get(*Registration.user_key_for(offer.user_id, offer.registration_id),
                                        consistent_read=True)
    except Registration.DoesNotExist:
        return None  # the offer ended between the reads: the caller's next read says how
    if registration.status != OFFERED:
        return None
    freed = freed_seat(registration, now=now)
    if freed is None:
        return None

    def build(freed: FreedSeat) -> LabelledTransaction:
        transaction = cancel_transaction(registration, freed, now=now, offer_end=state)
        if key is not None:
            add_completed_record(transaction, user_id=offer.user_id, key=key[0], fingerprint=key[1],
                                 response=response, now=now)
        return transaction

    cancelled = commit_round(FreeingCommit(freed, build))
    if cancelled is UNKNOWN_OUTCOME:
        return None  # the caller reads the offer again, which says whether it ended
    if cancelled is not None:
        if key is not None and cancelled.failed(IDEMPOTENCY):
            return StoredOutcome(stored_answer(cancelled.reasons[IDEMPOTENCY].raw_item, key[1]), replayed=True)
        if cancelled.failed(EVENT_SEATS) and (when := cancelled_in_image(cancelled.reasons[EVENT_SEATS].raw_item)):
            if state != Offer.EXPIRED:
                raise event_cancelled_error(when) from None
            return _call_off(offer, now=now, response=response)
        return None
    return StoredOutcome(response)


def _call_off(offer: Offer, *, now: datetime, response: StoredResponse) -> StoredOutcome | None:
    """The end of an offer of a cancelled event: the Offer alone leaves the sweep's index (called off), the
    registration stays offered and the seat stays where it is, as every registration of a cancelled event does."""
    transaction = LabelledTransaction()
    add_offer_end(transaction, user_id=offer.user_id, registration_id=offer.registration_id,
                  state=Offer.CALLED_OFF, now=now)
    if commit_round(transaction) is not None:
        return None  # ended meanwhile, or an unknown outcome: the caller's next read says how
    return StoredOutcome(response)


def _expire_best_effort(offer: Offer, *, now: datetime) -> None:
    try:
        offer_expire(user_id=offer.user_id, registration_id=offer.registration_id, now=now)
    except RegistrationError:
        logger.warning("could not hand on offer %s yet; the sweep will", offer.registration_id, exc_info=True)


def _remember(*, user_id: str, key: tuple[str, str], response: StoredResponse, now: datetime,
              sleep: Callable[[float], None]) -> StoredOutcome:
    return remember_outcome(user_id=user_id, key=key[0], fingerprint=key[1], response=response, now=now,
                            sleep=sleep)


def offers_sweep(*, now: datetime | None = None) -> int:
    """Hand every offer whose end has passed on to the next in line: the relay's periodic job
    (settings.RELAY_PERIODIC_JOBS). One Query of the offers index by end; each expiry is conditional, so any
    number of sweeps (and late accepts) hand an offer on once. Returns how many this sweep handed on."""
    now = now or utcnow()
    due = Offer.by_end.query(Offer.COLLECTION, Offer.gsi1sk <= Offer.listing_key(now, "~"), limit=SWEEP_LIMIT)
    handed = 0
    for offer in due:
        try:
            handed += offer_expire(user_id=offer.user_id, registration_id=offer.registration_id, now=now)
        except RegistrationError:
            logger.warning("offer %s stays for the next sweep", offer.registration_id, exc_info=True)
    return handed

