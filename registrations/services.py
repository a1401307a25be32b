"""Writes of the registrations app. Each promise below is kept by a DynamoDB condition, never a prior read."""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pynamodb.exceptions import PutError, UpdateError

from registrations import selectors
from registrations.errors import RegistrationError
from registrations.models import (
    CANCELLED, CONFIRMED, WAITLISTED, Event, EventSeats, Registration, RegistrationClaim, WaitlistEntry,
)
from registrations.selectors import event_get, event_to_dict
from tems.clock import utcnow
from tems.errors import DomainError
from tems.idempotency import StoredResponse, completed_record, record_is_absent_or_expired, replay_from_raw
from tems.outbox import outbox_message
from tems.transactions import LabelledTransaction, TransactionCancelled, retry_on_conflict

CONDITION_FAILED = "ConditionalCheckFailedException"


def new_event_id() -> str:
    return uuid.uuid4().hex[:12]


def event_create(
    *,
    title: str,
    description: str = "",
    location: str = "",
    starts_at: datetime,
    capacity: int,
    created_by: str,
    event_id: str | None = None,
    collection: str = Event.COLLECTION,
    expires_at: datetime | None = None,
) -> Event:
    """Create an event. Raises RegistrationError('conflict') if ``event_id`` is taken (the put is conditional).

    ``collection`` is the listing it appears in; the lab's scratch events use their own, off the event list,
    and an ``expires_at`` after which DynamoDB's TTL deletes the event item.
    """
    event_id = event_id or new_event_id()
    now = utcnow()
    event = Event(
        *Event.key_for(event_id),
        event_id=event_id,
        title=title,
        description=description,
        location=location,
        starts_at=starts_at,
        capacity=capacity,
        created_at=now,
        created_by=created_by,
        updated_at=now,
        updated_by=created_by,
        gsi1pk=collection,
        gsi1sk=Event.listing_key(starts_at, event_id),
        expires_at=expires_at,
    )
    try:
        # The version attribute makes PynamoDB send attribute_not_exists(version): a second create is refused.
        event.save()
    except PutError as error:
        if error.cause_response_code == CONDITION_FAILED:
            raise RegistrationError("conflict", f"An event with id {event_id!r} already exists.") from None
        raise
    return event


def event_update(
    *,
    event_id: str,
    expected_version: int,
    title: str,
    description: str,
    location: str,
    starts_at: datetime,
    capacity: int,
    updated_by: str,
) -> Event:
    """Apply an edit only if the event is still at ``expected_version``; one conditional UpdateItem.

    Raises RegistrationError: 'not_found'; 'conflict' (someone saved in between; ``extra['current']`` holds
    the stored event so the page can show theirs next to yours); 'invalid' (capacity below seats taken).
    A raised capacity then promotes from the waiting list (``waitlist_promote``), one transaction per seat.
    """
    event = Event(*Event.key_for(event_id), version=expected_version)
    actions = [
        Event.title.set(title),
        Event.description.set(description),
        Event.location.set(location),
        Event.starts_at.set(starts_at),
        Event.capacity.set(capacity),
        Event.gsi1sk.set(Event.listing_key(starts_at, event_id)),
        Event.updated_at.set(utcnow()),
        Event.updated_by.set(updated_by),
    ]
    # Seats already given cannot be taken back by shrinking the event.
    condition = Event.pk.exists() & (Event.registered_count <= capacity)
    try:
        event.update(actions=actions, condition=condition)
    except UpdateError as error:
        if error.cause_response_code != CONDITION_FAILED:
            raise
        # The write was refused; this read only explains why, it decides nothing.
        current = event_get(event_id=event_id)
        if current.version != expected_version:
            raise RegistrationError(
                "conflict",
                f"{current.updated_by or 'Someone'} changed this event after you opened it "
                f"(version {expected_version} -> {current.version}). Nothing of yours was saved.",
                current=event_to_dict(current),
            ) from None
        raise RegistrationError(
            "invalid",
            f"Capacity cannot go below the {current.registered_count} seats already taken.",
            errors={"capacity": [f"Must be at least {current.registered_count}."]},
        ) from None
    # More seats may let people in from the waiting list; a separate transaction per promotion, right away.
    waitlist_promote(event_id=event_id)
    return event


# --- registrations ------------------------------------------------------------------------------------------
#
# A first registration is ONE TransactWriteItems: claim + both registration items + the seat counter (with the
# seat condition) + the idempotency record, already COMPLETED with the response it will return + an outbox
# message. Whoever loses a race learns why from the cancellation reasons, read by label:
#   idempotency  the same key was used before: replay its stored response (ALL_OLD, no extra read)
#   claim        the student is already registered (another tap, another key): answer with that registration
#   event        no free seat (or the event is missing): join the waiting list, in a transaction of its own
#   conflict     another transaction held an item: try again after a jittered pause, bounded, then "busy"

# Labels of the items in a registration's transaction; the loser paths are decided by these, never by position.
IDEMPOTENCY = "idempotency"
CLAIM = "claim"
USER_REGISTRATION = "user_registration"
EVENT_REGISTRATION = "event_registration"
WAITLIST_ENTRY = "waitlist_entry"
EVENT_SEATS = "event"
OUTBOX = "outbox"

# Each round is one request. Losing the waitlist ticket to another joiner costs a round, so a burst of N
# waitlisters needs up to N rounds for the last of them; 64 covers a burst far above a real event's and still
# answers within about a second.
MAX_ROUNDS = 64
# TransactionConflict means another transaction was touching the same item just then: retrying is right, but
# past this many in one request the table is too hot and the student should be told to try again.
MAX_CONFLICTS = 12
CONFLICT_BASE_DELAY = 0.01
CONFLICT_MAX_DELAY = 0.25
# Losing the waitlist ticket is not a conflict but many joiners retry at once; a little spread avoids a herd.
TICKET_MAX_DELAY = 0.02
BUSY_RETRY_AFTER_SECONDS = 1


@dataclass(frozen=True)
class RegistrationOutcome:
    """What ``registration_create`` answered: the response to send and how it came about."""

    response: StoredResponse
    kind: str  # "created" | "already_registered" | "replayed"

    @property
    def replayed(self) -> bool:
        return self.kind == "replayed"

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.response.body)


@dataclass(frozen=True)
class _NewRegistration:
    """Everything about the registration being attempted, fixed before the first request is sent."""

    registration_id: str
    event_id: str
    user_id: str
    created_at: datetime
    idempotency_key: str
    fingerprint: str
    user_name: str | None = None


def new_registration_id() -> str:
    return uuid.uuid4().hex


def _busy(detail: str) -> RegistrationError:
    return RegistrationError("busy", detail, retry_after=BUSY_RETRY_AFTER_SECONDS)


def _conflict_pause(conflicts: int, sleep: Callable[[float], None]) -> None:
    if conflicts > MAX_CONFLICTS:
        raise _busy("Many people are registering for this event right now; please try again in a moment.")
    sleep(random.uniform(0, min(CONFLICT_MAX_DELAY, CONFLICT_BASE_DELAY * 2 ** conflicts)))


def registration_create(*, event_id: str, user_id: str, idempotency_key: str, fingerprint: str,
                        user_name: str | None = None, now: datetime | None = None,
                        sleep: Callable[[float], None] = time.sleep) -> RegistrationOutcome:
    """Register ``user_id`` for ``event_id`` exactly once per student and once per idempotency key.

    ``user_id`` is the student's immutable key (``tems.identity.user_key``); ``user_name`` is only shown.

    One request when the seat is free and the key is new. Returns the outcome whose response is the 201 of a
    new registration (confirmed, or waitlisted with its position when the event is full), the 200 of the
    student's existing registration, or the replay of the key's first response. Raises RegistrationError:
    'not_found' (no such event), 'unprocessable' (the key was used for another request), 'busy' (contention
    did not clear in time; nothing was written).
    """
    attempt = _NewRegistration(
        registration_id=new_registration_id(), event_id=event_id, user_id=user_id,
        created_at=now or utcnow(), idempotency_key=idempotency_key, fingerprint=fingerprint, user_name=user_name,
    )
    seats: dict[str, Any] | None = None  # the event as the last failed seat condition saw it (ALL_OLD)
    conflicts = 0
    for _ in range(MAX_ROUNDS):
        waitlist = seats is not None and not _has_free_seat(seats)
        transaction, response = (_waitlist_transaction(attempt, seats) if waitlist
                                 else _confirm_transaction(attempt))
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            if cancelled.failed(IDEMPOTENCY):
                return _replay(cancelled.reasons[IDEMPOTENCY].raw_item, attempt)
            if cancelled.failed(CLAIM):
                claim = RegistrationClaim.from_raw_data(cancelled.reasons[CLAIM].raw_item)
                return _already_registered(claim, attempt, sleep=sleep)
            if cancelled.failed(EVENT_SEATS):
                seats = _event_image(cancelled.reasons[EVENT_SEATS].raw_item, event_id)
                if waitlist:
                    sleep(random.uniform(0, TICKET_MAX_DELAY))
                continue
            if cancelled.is_conflict:
                conflicts += 1
                _conflict_pause(conflicts, sleep)
                continue
            raise
        return RegistrationOutcome(response, "created")
    raise _busy("The waiting list for this event is moving fast; please try again in a moment.")


def _event_image(raw_item: dict[str, Any] | None, event_id: str) -> dict[str, Any]:
    if not raw_item:
        # The seat condition includes "the event exists": no image back means there is no such event.
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.")
    seats = EventSeats.from_raw_data(raw_item)
    return {
        "capacity": int(seats.capacity),
        "registered_count": int(seats.registered_count or 0),
        "waitlist_count": int(seats.waitlist_count or 0),
        "waitlist_seq": None if seats.waitlist_seq is None else int(seats.waitlist_seq),
    }


def _has_free_seat(seats: dict[str, Any]) -> bool:
    # A free seat belongs to the head of the waiting list first; a newcomer only takes one nobody waits for.
    return seats["registered_count"] < seats["capacity"] and seats["waitlist_count"] == 0


def _base_transaction(attempt: _NewRegistration, *, status: str, position: int | None,
                      ticket: int | None) -> tuple[LabelledTransaction, StoredResponse]:
    """The items common to both kinds of new registration, with the response computed up front."""
    body = selectors.registration_to_dict(
        registration_id=attempt.registration_id, event_id=attempt.event_id, user_id=attempt.user_id,
        status=status, position=position, created_at=attempt.created_at, user_name=attempt.user_name,
    )
    response = StoredResponse.json(body, status=201)
    fields = {"registration_id": attempt.registration_id, "event_id": attempt.event_id,
              "user_id": attempt.user_id, "user_name": attempt.user_name, "status": status,
              "created_at": attempt.created_at, "ticket": ticket}
    transaction = LabelledTransaction()
    transaction.save(
        IDEMPOTENCY,
        completed_record(user_id=attempt.user_id, key=attempt.idempotency_key, fingerprint=attempt.fingerprint,
                         response=response, now=attempt.created_at),
        condition=record_is_absent_or_expired(attempt.created_at), return_old_on_failure=True,
    )
    transaction.save(
        CLAIM, RegistrationClaim(*RegistrationClaim.key_for(attempt.event_id, attempt.user_id), **fields),
        condition=RegistrationClaim.pk.does_not_exist(), return_old_on_failure=True,
    )
    transaction.save(USER_REGISTRATION,
                     Registration(*Registration.user_key_for(attempt.user_id, attempt.registration_id), **fields))
    transaction.save(EVENT_REGISTRATION,
                     Registration(*Registration.event_key_for(attempt.event_id, attempt.registration_id), **fields))
    transaction.save(OUTBOX, outbox_message(
        message_type="RegistrationCreated", now=attempt.created_at,
        # "user" is the immutable key in every message, as in the cancel and promote ones: the relay finds the
        # recipient by it, never by a name someone else may hold by then.
        payload={**{name: value for name, value in body.items() if name != "qr_svg"}, "user": attempt.user_id},
    ))
    return transaction, response


def _confirm_transaction(attempt: _NewRegistration) -> tuple[LabelledTransaction, StoredResponse]:
    transaction, response = _base_transaction(attempt, status=CONFIRMED, position=None, ticket=None)
    transaction.update(
        EVENT_SEATS, EventSeats(*EventSeats.key_for(attempt.event_id)),
        actions=[EventSeats.registered_count.add(1)],
        condition=(EventSeats.pk.exists() & (EventSeats.registered_count < EventSeats.capacity)
                   & (EventSeats.waitlist_count == 0)),
        return_old_on_failure=True,
    )
    return transaction, response


def _waitlist_transaction(attempt: _NewRegistration,
                          seats: dict[str, Any]) -> tuple[LabelledTransaction, StoredResponse]:
    # The ticket is the event's sequence plus one, claimed by the condition that the sequence is still what the
    # failed seat condition returned: no read decides it, and two joiners can never hold the same ticket. The
    # waitlist count is pinned too, so the position in the stored response is exact at commit.
    seen_seq = seats["waitlist_seq"]
    ticket = (seen_seq or 0) + 1
    position = seats["waitlist_count"] + 1
    transaction, response = _base_transaction(attempt, status=WAITLISTED, position=position, ticket=ticket)
    transaction.save(
        WAITLIST_ENTRY,
        WaitlistEntry(*WaitlistEntry.key_for(attempt.event_id, ticket), registration_id=attempt.registration_id,
                      event_id=attempt.event_id, user_id=attempt.user_id, ticket=ticket),
        condition=WaitlistEntry.pk.does_not_exist(),
    )
    sequence_unchanged = (EventSeats.waitlist_seq.does_not_exist() if seen_seq is None
                          else EventSeats.waitlist_seq == seen_seq)
    transaction.update(
        EVENT_SEATS, EventSeats(*EventSeats.key_for(attempt.event_id)),
        actions=[EventSeats.waitlist_count.add(1), EventSeats.waitlist_seq.set(ticket)],
        condition=(EventSeats.pk.exists() & sequence_unchanged
                   & (EventSeats.waitlist_count == seats["waitlist_count"])
                   & ((EventSeats.registered_count >= EventSeats.capacity) | (EventSeats.waitlist_count > 0))),
        return_old_on_failure=True,
    )
    return transaction, response


def _replay(raw_item: dict[str, Any], attempt: _NewRegistration) -> RegistrationOutcome:
    try:
        stored = replay_from_raw(raw_item, fingerprint=attempt.fingerprint)
    except DomainError as error:
        raise RegistrationError(error.code, error.detail) from None  # the key was used for another request
    if stored is None:
        # The key's first request is still running (only the generic @idempotent writes INPROGRESS records).
        raise _busy("This request is still being processed; try again in a moment.")
    return RegistrationOutcome(stored, "replayed")


def _already_registered(claim: RegistrationClaim, attempt: _NewRegistration, *,
                        sleep: Callable[[float], None]) -> RegistrationOutcome:
    """The student holds a registration from another tap: answer 200 with it, and remember that under this key.

    The claim came back as the failed transaction's ALL_OLD image, so a confirmed registration costs one more
    request (storing the outcome); a waitlisted one also counts its current position.
    """
    response = StoredResponse.json(selectors.registration_view(registration=claim), status=200)
    record = completed_record(user_id=attempt.user_id, key=attempt.idempotency_key,
                              fingerprint=attempt.fingerprint, response=response, now=attempt.created_at)

    def store() -> None:
        transaction = LabelledTransaction()
        transaction.save(IDEMPOTENCY, record, condition=record_is_absent_or_expired(attempt.created_at),
                         return_old_on_failure=True)
        transaction.commit()

    try:
        retry_on_conflict(store, sleep=sleep, on_exhausted=lambda _: _busy(
            "This request is being answered by another attempt right now; try again in a moment."))
    except TransactionCancelled as cancelled:
        if not cancelled.failed(IDEMPOTENCY):
            raise
        # A duplicate of this very tap stored its answer first: give the same bytes.
        return _replay(cancelled.reasons[IDEMPOTENCY].raw_item, attempt)
    return RegistrationOutcome(response, "already_registered")


# --- cancellation and promotion -----------------------------------------------------------------------------
#
# Promotion reads the head of the waiting list, then writes under conditions that the read is still true (the
# head's entry still exists; with no head, that nobody has joined since). Tickets only grow, so an entry that
# still exists is still the head, and a stale read costs a retry, never a wrong promotion.

HEAD_CLAIM = "head_claim"
HEAD_USER_REGISTRATION = "head_user_registration"
HEAD_EVENT_REGISTRATION = "head_event_registration"
HEAD_WAITLIST_ENTRY = "head_waitlist_entry"
OUTBOX_PROMOTED = "outbox_promoted"

CANCEL_MAX_ROUNDS = 16


def _add_promotion(transaction: LabelledTransaction, head: WaitlistEntry, *, now: datetime) -> None:
    """Move the waitlist head to confirmed: its claim, both registration items and its entry, in ``transaction``."""
    is_waiting = Registration.status == WAITLISTED
    for label, model in (
        (HEAD_USER_REGISTRATION, Registration(*Registration.user_key_for(head.user_id, head.registration_id))),
        (HEAD_EVENT_REGISTRATION, Registration(*Registration.event_key_for(head.event_id, head.registration_id))),
    ):
        transaction.update(label, model, actions=[
            Registration.status.set(CONFIRMED), Registration.ticket.remove(), Registration.promoted_at.set(now),
        ], condition=Registration.pk.exists() & is_waiting)
    transaction.update(
        HEAD_CLAIM, RegistrationClaim(*RegistrationClaim.key_for(head.event_id, head.user_id)),
        actions=[RegistrationClaim.status.set(CONFIRMED), RegistrationClaim.ticket.remove()],
        condition=RegistrationClaim.registration_id == head.registration_id,
    )
    transaction.delete(HEAD_WAITLIST_ENTRY, WaitlistEntry(*WaitlistEntry.key_for(head.event_id, int(head.ticket))),
                       condition=WaitlistEntry.registration_id == head.registration_id)
    transaction.save(OUTBOX_PROMOTED, outbox_message(message_type="RegistrationPromoted", now=now, payload={
        "registration_id": head.registration_id, "event_id": head.event_id, "user": head.user_id,
        "status": CONFIRMED,
    }))


def registration_cancel(*, user_id: str, registration_id: str, now: datetime | None = None,
                        sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Cancel the caller's registration in one transaction, promoting the waitlist head into a freed seat.

    Deletes the claim and both registration items (and the waitlist entry of a waitlisted one), moves the
    counters and writes ``RegistrationCancelled`` to the outbox; a freed seat goes to the head of the waiting
    list in the same transaction, so the event is never over capacity and no seat sits free while someone waits.
    Returns ``{registration_id, status: "cancelled"}``. Raises RegistrationError: 'not_found' (no such
    registration of this user), 'busy' (contention did not clear in time; nothing was written).
    """
    now = now or utcnow()
    seen = False
    conflicts = 0
    for _ in range(CANCEL_MAX_ROUNDS):
        try:
            registration = selectors.registration_get(user_id=user_id, registration_id=registration_id)
        except RegistrationError:
            if seen:
                break  # a concurrent cancel of the same registration won: what was asked for is done
            raise
        seen = True
        head = selectors.waitlist_head(event_id=registration.event_id) if registration.status == CONFIRMED else None
        transaction = _cancel_transaction(registration, head, now=now)
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            if cancelled.is_conflict and not any(cancelled.failed(label) for label in cancelled.reasons):
                conflicts += 1
                _conflict_pause(conflicts, sleep)
            # Any failed condition means a read above is stale (a promotion, a new joiner, a concurrent cancel):
            # read again and rebuild; the loop is bounded.
            continue
        break
    else:
        raise _busy("This registration is changing right now; please try again in a moment.")
    return {"registration_id": registration_id, "status": CANCELLED}


def _cancel_transaction(registration: Registration, head: WaitlistEntry | None, *,
                        now: datetime) -> LabelledTransaction:
    event_id, user_id, registration_id = registration.event_id, registration.user_id, registration.registration_id
    transaction = LabelledTransaction()
    transaction.delete(CLAIM, RegistrationClaim(*RegistrationClaim.key_for(event_id, user_id)),
                       condition=RegistrationClaim.registration_id == registration_id)
    # The status we read decides which counter moves, so the delete only applies if it is still that status.
    transaction.delete(USER_REGISTRATION, Registration(*Registration.user_key_for(user_id, registration_id)),
                       condition=Registration.status == registration.status)
    transaction.delete(EVENT_REGISTRATION, Registration(*Registration.event_key_for(event_id, registration_id)),
                       condition=Registration.status == registration.status)
    transaction.save(OUTBOX, outbox_message(message_type="RegistrationCancelled", now=now, payload={
        "registration_id": registration_id, "event_id": event_id, "user": user_id,
        "previous_status": registration.status,
    }))
    seats = EventSeats(*EventSeats.key_for(event_id))
    if registration.status == WAITLISTED:
        transaction.delete(WAITLIST_ENTRY, WaitlistEntry(*WaitlistEntry.key_for(event_id, int(registration.ticket))),
                           condition=WaitlistEntry.registration_id == registration_id)
        transaction.update(EVENT_SEATS, seats, actions=[EventSeats.waitlist_count.add(-1)],
                           condition=EventSeats.pk.exists())
    elif head is not None:
        # The freed seat passes straight to the head: registered_count stays, the waiting list shrinks.
        _add_promotion(transaction, head, now=now)
        transaction.update(EVENT_SEATS, seats, actions=[EventSeats.waitlist_count.add(-1)],
                           condition=EventSeats.waitlist_count > 0)
    else:
        # Nobody was waiting when we looked; the condition makes sure nobody joined since.
        transaction.update(EVENT_SEATS, seats, actions=[EventSeats.registered_count.add(-1)],
                           condition=(EventSeats.waitlist_count == 0) & (EventSeats.registered_count > 0))
    return transaction


def waitlist_promote(*, event_id: str, now: datetime | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> int:
    """Fill the event's free seats from the head of its waiting list, one transaction per promotion.

    Used after staff raise the capacity. Each promotion takes a seat under the seat condition, so it can never
    overbook, however many promoters run at once. Returns how many registrations this call promoted.
    """
    now = now or utcnow()
    promoted = conflicts = 0
    for _ in range(MAX_ROUNDS):
        head = selectors.waitlist_head(event_id=event_id)
        if head is None:
            return promoted
        transaction = LabelledTransaction()
        _add_promotion(transaction, head, now=now)
        transaction.update(
            EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
            actions=[EventSeats.registered_count.add(1), EventSeats.waitlist_count.add(-1)],
            condition=EventSeats.registered_count < EventSeats.capacity,
        )
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            if cancelled.failed(EVENT_SEATS):
                return promoted  # no free seat left
            if cancelled.is_conflict and not any(cancelled.failed(label) for label in cancelled.reasons):
                conflicts += 1
                _conflict_pause(conflicts, sleep)
            continue  # the head moved (cancelled or promoted by someone else): look again
        promoted += 1
    return promoted
