"""Writes of the registrations app. Each promise below is kept by a DynamoDB condition, never a prior read."""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from registrations import selectors
from registrations.errors import RegistrationError
from registrations.models import (
    CANCELLED, CONFIRMED, WAITLISTED, Event, EventSeats, Registration, RegistrationClaim, WaitlistEntry,
)
from registrations.selectors import event_to_dict
from tems.clock import utcnow
from tems.errors import DomainError
from tems.idempotency import (
    IdempotencyRecord, StoredResponse, completed_record, record_is_absent_or_expired, replay_from_raw,
    replay_from_record,
)
from tems.outbox import OutboxMessage, outbox_message
from tems.transactions import LabelledTransaction, TransactionCancelled, retry_on_conflict

logger = logging.getLogger(__name__)

# The outbox message an event edit writes in its own transaction: "fill free seats from the waiting list".
PROMOTION_REQUESTED = "WaitlistPromotionRequested"


def new_event_id() -> str:
    return uuid.uuid4().hex[:12]


def waitlist_promotion_requested(message: OutboxMessage) -> None:
    """Outbox handler of ``WaitlistPromotionRequested``: finish filling the event's free seats (idempotent)."""
    waitlist_promote(event_id=message.data["event_id"])


def _new_event(*, event_id: str | None, title: str, description: str, location: str, starts_at: datetime,
               capacity: int, created_by: str, collection: str, expires_at: datetime | None = None) -> Event:
    event_id = event_id or new_event_id()
    now = utcnow()
    return Event(
        *Event.key_for(event_id),
        event_id=event_id, title=title, description=description, location=location, starts_at=starts_at,
        capacity=capacity, created_at=now, created_by=created_by, updated_at=now, updated_by=created_by,
        gsi1pk=collection, gsi1sk=Event.listing_key(starts_at, event_id), expires_at=expires_at,
    )


def _commit_event_create(event: Event, *, record: IdempotencyRecord | None = None) -> None:
    """The event (and the tap's COMPLETED record) as one TransactWriteItems.

    A transaction and not a PutItem because botocore sends it with a ClientRequestToken and repeats the token
    on its own retries: after a lost answer DynamoDB answers the retry as a success instead of letting it fail
    the ``attribute_not_exists`` condition that the first attempt already satisfied (a false "already exists").
    """
    def attempt() -> None:
        transaction = LabelledTransaction()
        transaction.save(EVENT, event, condition=Event.pk.does_not_exist())
        if record is not None:
            transaction.save(IDEMPOTENCY, record, condition=record_is_absent_or_expired(record.created_at),
                             return_old_on_failure=True)
        transaction.commit()

    try:
        retry_on_conflict(attempt, on_exhausted=lambda _: _busy("Events are being changed right now; try again."))
    except TransactionCancelled as cancelled:
        if cancelled.failed(EVENT) and not cancelled.failed(IDEMPOTENCY):
            raise RegistrationError("conflict", f"An event with id {event.event_id!r} already exists.") from None
        raise
    event.version = 1


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
    and an ``expires_at`` after which DynamoDB's TTL deletes the event item. For a person's request use
    ``event_create_once``, which also takes the tap's idempotency key.
    """
    event = _new_event(event_id=event_id, title=title, description=description, location=location,
                       starts_at=starts_at, capacity=capacity, created_by=created_by, collection=collection,
                       expires_at=expires_at)
    _commit_event_create(event)
    return event


@dataclass(frozen=True)
class StoredOutcome:
    """A write's answer as it will be sent (and replayed): the response and whether this is a replay."""

    response: StoredResponse
    replayed: bool = False

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.response.body)


def event_api_location(event_id: str) -> str:
    return f"/api/events/{event_id}"


def event_create_once(*, user_id: str, idempotency_key: str, fingerprint: str, title: str,
                      description: str = "", location: str = "", starts_at: datetime, capacity: int,
                      created_by: str) -> StoredOutcome:
    """Create an event once per (staff member, idempotency key): the same key answers the first 201 again.

    ``user_id`` (``tems.identity.user_key``) scopes the key; ``created_by`` is the name the event shows.

    The key's record is born COMPLETED inside the creating transaction, holding the response (the event as the
    API shows it, with its ``Location``), so a retry of the tap, even after the answer was lost or the server
    died right after the commit, is answered byte for byte and never creates a second event. Raises
    RegistrationError: 'unprocessable' (the key was used for a different request), 'busy'.
    """
    event = _new_event(event_id=None, title=title, description=description, location=location,
                       starts_at=starts_at, capacity=capacity, created_by=created_by, collection=Event.COLLECTION)
    # The event as it will be once created, for the stored response. (Its version stays unset until the commit:
    # PynamoDB turns an unset version into the condition attribute_not_exists(version).)
    event.version = 1
    body = event_to_dict(event)
    del event.attribute_values["version"]
    response = StoredResponse(201, StoredResponse.json(body, status=201).body,
                              headers=(("Location", event_api_location(event.event_id)),))
    record = completed_record(user_id=user_id, key=idempotency_key, fingerprint=fingerprint,
                              response=response, now=event.created_at)
    try:
        _commit_event_create(event, record=record)
    except TransactionCancelled as cancelled:
        if not cancelled.failed(IDEMPOTENCY):
            raise
        return StoredOutcome(_replay_raw(cancelled.reasons[IDEMPOTENCY].raw_item, fingerprint), replayed=True)
    return StoredOutcome(response)


def _replay_raw(raw_item: dict[str, Any], fingerprint: str) -> StoredResponse:
    try:
        stored = replay_from_raw(raw_item, fingerprint=fingerprint)
    except DomainError as error:
        raise RegistrationError(error.code, error.detail) from None  # the key was used for another request
    if stored is None:
        raise _busy("This request is still being processed; try again in a moment.")
    return stored


@dataclass(frozen=True)
class EventUpdate:
    """A saved edit: the event as written, and how far filling freed seats from the waiting list got."""

    event_id: str
    version: int  # the version the edit created
    promoted: int = 0
    # True when the promotion after the commit could not finish (throttled, contended, the seats changed
    # under it): the outbox message written with the edit finishes it shortly, nothing is lost.
    promotion_pending: bool = False


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
) -> EventUpdate:
    """Apply an edit only if the event is still at ``expected_version``: one TransactWriteItems.

    The transaction holds the version-checked update and a ``WaitlistPromotionRequested`` outbox message, so
    "seats freed by a raised capacity go to the waiting list" survives this process dying right after the
    commit. It is a transaction (not an UpdateItem) for its ClientRequestToken: after a lost answer, botocore's
    retry is answered as a success instead of failing the version check the first attempt already passed (a
    false "someone else saved"). After the commit the promotion runs here too, best effort; a failure there is
    reported in the result, never raised: the edit is saved.

    Raises RegistrationError: 'not_found'; 'conflict' (someone saved in between; ``extra['current']`` holds
    the stored event so the page can show theirs next to yours); 'invalid' (capacity below seats taken); 'busy'.
    """
    now = utcnow()
    # Seats already given cannot be taken back by shrinking the event.
    condition = Event.pk.exists() & (Event.registered_count <= capacity)

    def attempt() -> None:
        # Built afresh per attempt: PynamoDB appends its version action to the list it is given.
        actions = [
            Event.title.set(title),
            Event.description.set(description),
            Event.location.set(location),
            Event.starts_at.set(starts_at),
            Event.capacity.set(capacity),
            Event.gsi1sk.set(Event.listing_key(starts_at, event_id)),
            Event.updated_at.set(now),
            Event.updated_by.set(updated_by),
        ]
        transaction = LabelledTransaction()
        # PynamoDB adds "version = :expected" and "ADD version 1": the check and the change are one write.
        transaction.update(EVENT, Event(*Event.key_for(event_id), version=expected_version), actions=actions,
                           condition=condition, return_old_on_failure=True)
        transaction.save(OUTBOX, outbox_message(message_type=PROMOTION_REQUESTED, now=now,
                                                payload={"event_id": event_id}))
        transaction.commit()

    try:
        retry_on_conflict(attempt, on_exhausted=lambda _: _busy(
            "This event is being changed right now; nothing was saved. Try again."))
    except TransactionCancelled as cancelled:
        if not cancelled.failed(EVENT):
            raise
        raw = cancelled.reasons[EVENT].raw_item
        if not raw:
            raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
        # The failed write's own ALL_OLD image says why; no read.
        current = Event.from_raw_data(raw)
        if current.version != expected_version:
            raise RegistrationError(
                "conflict",
                f"{current.updated_by or 'Someone'} changed this event after you opened it "
                f"(version {expected_version} → {current.version}). Nothing of yours was saved.",
                current=event_to_dict(current), expected_version=expected_version,
            ) from None
        raise RegistrationError(
            "invalid",
            f"Capacity cannot go below the {current.registered_count} seats already taken.",
            errors={"capacity": [_capacity_problem(int(current.registered_count))]},
        ) from None
    try:
        promoted = waitlist_promote(event_id=event_id)
    except Exception:  # noqa: BLE001 - the edit is saved; the outbox message finishes the promotion
        logger.warning("promotion after editing event %s left to the outbox", event_id, exc_info=True)
        return EventUpdate(event_id, int(expected_version) + 1, promotion_pending=True)
    return EventUpdate(event_id, int(expected_version) + 1, promoted=promoted)


def _capacity_problem(registered: int) -> str:
    people = "1 person is" if registered == 1 else f"{registered} people are"
    return (f"{people} registered, so the capacity must be at least {registered}. Seats already given are not "
            "taken back: to shrink the event further, those registrations must be cancelled first.")


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
EVENT = EVENT_SEATS  # the event item, in an edit's or a creation's transaction
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
    healed = False
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
                _refuse_if_closed(seats, attempt)
                if not healed and _seats_free_while_waiting(seats):
                    # A promotion that did not finish (its process died, it was throttled): finish it before
                    # this newcomer, who must not overtake the people waiting, then look again.
                    healed = True
                    _promote_best_effort(event_id)
                    seats = None
                    continue
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
        "starts_at": seats.starts_at,
    }


def _still_open(attempt: _NewRegistration):
    # Part of the seat condition, so "closed" is decided by the write that takes the seat, not by a read. The
    # stored format (UTCDateTimeAttribute) is fixed-width UTC, so comparing strings compares instants.
    return EventSeats.starts_at > attempt.created_at


def _refuse_if_closed(seats: dict[str, Any], attempt: _NewRegistration) -> None:
    starts_at = seats["starts_at"]
    if starts_at is not None and starts_at <= attempt.created_at:
        raise RegistrationError(
            "conflict", f"Registration closed when the event started ({starts_at:%a %-d %b %Y, %H:%M} UTC): "
                        "nobody can register or join the waiting list any more.",
            reason="registration_closed", starts_at=starts_at.isoformat())


def _seats_free_while_waiting(seats: dict[str, Any]) -> bool:
    return seats["registered_count"] < seats["capacity"] and seats["waitlist_count"] > 0


def _promote_best_effort(event_id: str) -> None:
    try:
        waitlist_promote(event_id=event_id)
    except Exception:  # noqa: BLE001 - the outbox message of the edit that freed the seats will finish it
        logger.warning("could not finish the promotion of event %s", event_id, exc_info=True)


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
                   & (EventSeats.waitlist_count == 0) & _still_open(attempt)),
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
                   & ((EventSeats.registered_count >= EventSeats.capacity) | (EventSeats.waitlist_count > 0))
                   & _still_open(attempt)),
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


def cancel_response(*, registration_id: str, event_id: str) -> StoredResponse:
    return StoredResponse.json({"registration_id": registration_id, "event_id": event_id, "status": CANCELLED},
                               status=200)


def registration_cancel(*, user_id: str, registration_id: str, now: datetime | None = None,
                        sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Cancel the caller's registration in one transaction, promoting the waitlist head into a freed seat.

    Deletes the claim and both registration items (and the waitlist entry of a waitlisted one), moves the
    counters and writes ``RegistrationCancelled`` to the outbox; a freed seat goes to the head of the waiting
    list in the same transaction, so the event is never over capacity and no seat sits free while someone waits.
    Returns ``{registration_id, event_id, status: "cancelled"}``. Raises RegistrationError: 'not_found' (no such
    registration of this user), 'busy' (contention did not clear in time; nothing was written).
    For a person's tap use ``registration_cancel_once``.
    """
    return _cancel(user_id=user_id, registration_id=registration_id, now=now or utcnow(), sleep=sleep).data


def registration_cancel_once(*, user_id: str, registration_id: str, idempotency_key: str, fingerprint: str,
                             now: datetime | None = None,
                             sleep: Callable[[float], None] = time.sleep) -> StoredOutcome:
    """``registration_cancel`` once per (user, idempotency key), the key's record inside the cancel's transaction.

    The record is born COMPLETED with the 200 it answers, in the same TransactWriteItems as the cancellation:
    a retry of the tap (lost answer, dead server, double tap) replays those bytes, never a 404 for the
    registration this very tap removed. Raises RegistrationError: 'not_found' (no such registration of this
    user, and this key cancelled nothing), 'unprocessable' (key used for another request), 'busy'.
    """
    return _cancel(user_id=user_id, registration_id=registration_id, now=now or utcnow(), sleep=sleep,
                   key=(idempotency_key, fingerprint))


def _cancel(*, user_id: str, registration_id: str, now: datetime, sleep: Callable[[float], None],
            key: tuple[str, str] | None = None) -> StoredOutcome:
    seen: Registration | None = None
    conflicts = 0
    for _ in range(CANCEL_MAX_ROUNDS):
        try:
            registration = selectors.registration_get(user_id=user_id, registration_id=registration_id)
        except RegistrationError:
            if key is not None:
                # A read only to explain the refusal: did this very key cancel it already?
                replay = _stored_outcome(user_id=user_id, key=key)
                if replay is not None:
                    return replay
            if seen is None:
                raise
            # A concurrent cancel of the same registration won: what was asked for is done.
            response = cancel_response(registration_id=registration_id, event_id=seen.event_id)
            return _remember(user_id=user_id, key=key, response=response, now=now, sleep=sleep)
        seen = registration
        head = selectors.waitlist_head(event_id=registration.event_id) if registration.status == CONFIRMED else None
        transaction = _cancel_transaction(registration, head, now=now)
        response = cancel_response(registration_id=registration_id, event_id=registration.event_id)
        if key is not None:
            transaction.save(IDEMPOTENCY, completed_record(user_id=user_id, key=key[0], fingerprint=key[1],
                                                           response=response, now=now),
                             condition=record_is_absent_or_expired(now), return_old_on_failure=True)
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            if cancelled.failed(IDEMPOTENCY):
                return StoredOutcome(_replay_raw(cancelled.reasons[IDEMPOTENCY].raw_item, key[1]), replayed=True)
            if cancelled.is_conflict and not any(cancelled.failed(label) for label in cancelled.reasons):
                conflicts += 1
                _conflict_pause(conflicts, sleep)
            # Any failed condition means a read above is stale (a promotion, a new joiner, a concurrent cancel):
            # read again and rebuild; the loop is bounded.
            continue
        return StoredOutcome(response)
    raise _busy("This registration is changing right now; please try again in a moment.")


def _stored_outcome(*, user_id: str, key: tuple[str, str]) -> StoredOutcome | None:
    try:
        record = IdempotencyRecord.get(*IdempotencyRecord.key_for(user_id, key[0]), consistent_read=True)
    except IdempotencyRecord.DoesNotExist:
        return None
    if record.expires_at is not None and record.expires_at < utcnow():
        return None
    try:
        stored = replay_from_record(record, fingerprint=key[1])
    except DomainError as error:
        raise RegistrationError(error.code, error.detail) from None
    return StoredOutcome(stored, replayed=True) if stored is not None else None


def _remember(*, user_id: str, key: tuple[str, str] | None, response: StoredResponse, now: datetime,
              sleep: Callable[[float], None]) -> StoredOutcome:
    """Store ``response`` under the key in a transaction of its own (nothing else to change with it)."""
    if key is None:
        return StoredOutcome(response)
    record = completed_record(user_id=user_id, key=key[0], fingerprint=key[1], response=response, now=now)

    def store() -> None:
        transaction = LabelledTransaction()
        transaction.save(IDEMPOTENCY, record, condition=record_is_absent_or_expired(now), return_old_on_failure=True)
        transaction.commit()

    try:
        retry_on_conflict(store, sleep=sleep, on_exhausted=lambda _: _busy(
            "This request is being answered by another attempt right now; try again in a moment."))
    except TransactionCancelled as cancelled:
        if not cancelled.failed(IDEMPOTENCY):
            raise
        return StoredOutcome(_replay_raw(cancelled.reasons[IDEMPOTENCY].raw_item, key[1]), replayed=True)
    return StoredOutcome(response)


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
    promoted = conflicts = stale = 0
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
        transaction = LabelledTransaction()
        for n, head in enumerate(heads):
            _add_promotion(transaction, head, now=now, suffix=f"_{n}")
        transaction.update(
            EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
            actions=[EventSeats.registered_count.add(len(heads)), EventSeats.waitlist_count.add(-len(heads))],
            condition=(EventSeats.capacity == capacity) & (EventSeats.registered_count <= capacity - len(heads)),
        )
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            if cancelled.is_conflict and not any(cancelled.failed(label) for label in cancelled.reasons):
                conflicts += 1
                _conflict_pause(conflicts, sleep)
            else:
                stale += 1  # the counters or the queue moved since the read: look again
                if stale >= PROMOTION_STALE_ROUNDS:
                    raise _busy("The waiting list of this event is changing fast; promotion will finish later.")
            continue
        promoted += len(heads)
        stale = 0
