"""Event writes: create (once per tap), the version-checked edit that hands freed seats to the waiting list, and
the event's cancellation."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from registrations.errors import RegistrationError, cancelled_in_image, event_cancelled_error
from registrations.events.models import Event, EventCancellation, EventSeats
from registrations.messages.models import EventMessage
from registrations.messages.services import MESSAGE, REGISTRANTS
from registrations.seating import shards
from registrations.seating.gate import GATE, GateBusy, gate_get, new_gate
from registrations.seating.models import SeatGate, SeatShard, WaitlistQueue
from registrations.seating.shards import SeatCounts, add_reslice, planned_sizes
from registrations.serializers import cancellation_to_dict, event_to_dict
from registrations.services.promotion import waitlist_promote
from registrations.write_rules import (
    EVENT,
    IDEMPOTENCY,
    MAX_CONFLICTS,
    OUTBOX,
    QUEUE,
    SEAT,
    WRITE_POLICY,
    StoredOutcome,
    busy_error,
    commit_tap,
    conflict_backoff,
    remember_answer,
    stored_answer,
)
from tems.clock import utcnow
from tems.idempotency import StoredResponse, add_completed_record
from tems.outbox import OutboxMessage, outbox_message
from tems.transactions import UNKNOWN_OUTCOME, LabelledTransaction, TransactionCancelled

logger = logging.getLogger(__name__)

# The outbox message an event edit writes in its own transaction: "fill free seats from the waiting list".
PROMOTION_REQUESTED = "WaitlistPromotionRequested"
# Edits whose seat counters moved between their read and their write (registrations keep coming): read again.
EDIT_MAX_ROUNDS = 8


def new_event_id() -> str:
    return uuid.uuid4().hex[:12]


def waitlist_promotion_requested(message: OutboxMessage) -> None:
    """Outbox handler of ``WaitlistPromotionRequested``: finish filling the event's free seats (idempotent)."""
    waitlist_promote(event_id=message.data["event_id"])


def _new_event(*, event_id: str | None, title: str, description: str, location: str, starts_at: datetime,
               capacity: int, created_by: str, collection: str, expires_at: datetime | None = None,
               reminder_hours: int | None = None, offer_hours: int | None = None) -> Event:
    event_id = event_id or new_event_id()
    now = utcnow()
    return Event(
        *Event.key_for(event_id),
        event_id=event_id, title=title, description=description, location=location, starts_at=starts_at,
        capacity=capacity, created_at=now, created_by=created_by, updated_at=now, updated_by=created_by,
        gsi1pk=collection, gsi1sk=Event.listing_key(starts_at, event_id), expires_at=expires_at,
        seat_shards=shards.shard_count(capacity), sliced=capacity,
        reminder_hours=reminder_hours, offer_hours=offer_hours or None,
    )


def _commit_event_create(event: Event, *, add_record: Callable[[LabelledTransaction], None] | None = None) -> None:
    """The event (and the tap's COMPLETED record) as one TransactWriteItems.

    A transaction and not a PutItem because botocore sends it with a ClientRequestToken and repeats the token
    on its own retries: after a lost answer DynamoDB answers the retry as a success instead of letting it fail
    the ``attribute_not_exists`` condition that the first attempt already satisfied (a false "already exists").
    """
    def attempt() -> None:
        transaction = LabelledTransaction()
        transaction.save(EVENT, event, condition=Event.pk.does_not_exist())
        # The seat shards are born with the event, so a registration never meets an event without them.
        for shard in shards.new_shards(event_id=event.event_id, capacity=int(event.capacity),
                                      starts_at=event.starts_at):
            transaction.save(f"shard_{int(shard.shard)}", shard, condition=SeatShard.pk.does_not_exist())
        # And the queue the waiting list's lanes take their tickets from (registrations.seating.lanes, "Claims"),
        # and its gate (registrations.seating.gate).
        transaction.save(QUEUE, WaitlistQueue.new(event.event_id), condition=WaitlistQueue.pk.does_not_exist())
        transaction.save(GATE, new_gate(event_id=event.event_id, shards=int(event.seat_shards)),
                         condition=SeatGate.pk.does_not_exist())
        if add_record is not None:
            add_record(transaction)
        transaction.commit()

    try:
        WRITE_POLICY.run(attempt, busy=lambda _: busy_error("Events are being changed right now; try again."))
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
    reminder_hours: int | None = None,
    offer_hours: int | None = None,
) -> Event:
    """Create an event. Raises RegistrationError('conflict') if ``event_id`` is taken (the put is conditional).

    ``collection`` is the listing it appears in; the lab's scratch events use their own, off the event list,
    and an ``expires_at`` after which DynamoDB's TTL deletes the event item. For a person's request use
    ``event_create_once``, which also takes the tap's idempotency key.
    """
    event = _new_event(event_id=event_id, title=title, description=description, location=location,
                       starts_at=starts_at, capacity=capacity, created_by=created_by, collection=collection,
                       expires_at=expires_at, reminder_hours=reminder_hours, offer_hours=offer_hours)
    _commit_event_create(event)
    return event


def event_api_location(event_id: str) -> str:
    return f"/api/events/{event_id}"


def event_create_once(*, user_id: str, idempotency_key: str, fingerprint: str, title: str,
                      description: str = "", location: str = "", starts_at: datetime, capacity: int,
                      created_by: str, reminder_hours: int | None = None,
                      offer_hours: int | None = None) -> StoredOutcome:
    """Create an event once per (staff member, idempotency key): the same key answers the first 201 again.

    ``user_id`` (``tems.identity.user_key``) scopes the key; ``created_by`` is the name the event shows.

    The key's record is born COMPLETED inside the creating transaction, holding the response (the event as the
    API shows it, with its ``Location``), so a retry of the tap, even after the answer was lost or the server
    died right after the commit, is answered byte for byte and never creates a second event. Raises
    RegistrationError: 'unprocessable' (the key was used for a different request), 'busy'.
    """
    event = _new_event(event_id=None, title=title, description=description, location=location,
                       starts_at=starts_at, capacity=capacity, created_by=created_by, collection=Event.COLLECTION,
                       reminder_hours=reminder_hours, offer_hours=offer_hours)
    # The event as it will be once created, for the stored response. (Its version stays unset until the commit:
    # PynamoDB turns an unset version into the condition attribute_not_exists(version).)
    event.version = 1
    body = event_to_dict(event, seats=SeatCounts(registered=0, waiting=0, capacity=int(capacity)))
    del event.attribute_values["version"]
    response = StoredResponse(201, StoredResponse.json(body, status=201).body,
                              headers=(("Location", event_api_location(event.event_id)),))
    add_record = partial(add_completed_record, user_id=user_id, key=idempotency_key, fingerprint=fingerprint,
                         response=response, now=event.created_at)
    try:
        _commit_event_create(event, add_record=add_record)
    except TransactionCancelled as cancelled:
        if not cancelled.failed(IDEMPOTENCY):
            raise
        return StoredOutcome(stored_answer(cancelled.reasons[IDEMPOTENCY].raw_item, fingerprint), replayed=True)
    return StoredOutcome(response)


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
    reminder_hours: int | None = None,
    offer_hours: int | None = None,
) -> EventUpdate:
    """Apply an edit only if the event is still at ``expected_version``: one TransactWriteItems.

    The transaction holds the version-checked update and a ``WaitlistPromotionRequested`` outbox message, so
    "seats freed by a raised capacity go to the waiting list" survives this process dying right after the
    commit. It is a transaction (not an UpdateItem) for its ClientRequestToken: after a lost answer, botocore's
    retry is answered as a success instead of failing the version check the first attempt already passed (a
    false "someone else saved"). After the commit the promotion runs here too, best effort; a failure there is
    reported in the result, never raised: the edit is saved.

    Raises RegistrationError: 'not_found'; 'conflict' (someone saved in between; ``extra['current']`` holds
    the stored event so the page can show theirs next to yours; reason 'event_cancelled' once the event was called
    off); 'invalid' (capacity below seats taken); 'busy'.
    ``reminder_hours`` None leaves the event's reminder as it is; so does ``offer_hours`` its waitlist mode (0:
    automatic promotion; hours: offers with that window, for seats freed from now on).
    """
    now = utcnow()

    def attempt() -> None:
        # The seat counters and shards are read only to propose the new slices: every shard's slice is written
        # under "taken <= slice" and the event under "counters as read", so a stale read fails, never oversells.
        counters = _counters(event_id)
        transaction = LabelledTransaction()
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
        if reminder_hours is not None:  # None: as it is
            actions.append(Event.reminder_hours.set(reminder_hours))
        if offer_hours is not None:  # None: as it is
            actions.append(Event.offer_hours.set(offer_hours) if offer_hours else Event.offer_hours.remove())
        # A cancelled event is not edited: a re-slice would write shards without the cancellation's mark.
        condition = Event.pk.exists() & Event.cancelled_at.does_not_exist()
        if counters is not None:
            count = int(counters.seat_shards)
            sliced = int(counters.sliced)
            try:
                gate = gate_get(event_id=event_id)
            except GateBusy:
                raise busy_error("This event's seats are changing right now; nothing was saved. Try again.") from None
            if gate is None:  # the gate is born with the event: it is being deleted (a lab scratch event)
                raise RegistrationError("not_found", f"There is no event with id {event_id!r}.")
            shards_read = shards.shards_get(event_id=event_id, count=count)
            waiting = sum(int(shard.waiting or 0) for shard in shards_read)
            # A raise while people wait stays unsliced: waitlist_promote hands it to them before any newcomer.
            # With nobody waiting the new slices are for newcomers: the waiting list's gate opens (under the
            # condition, on every shard, that nobody joined its lane since the read).
            target = capacity if not waiting else min(sliced, capacity)
            sizes = planned_sizes(target=target, count=count, shards_read=shards_read)
            add_reslice(transaction, event_id=event_id, shards_read=shards_read, sizes=sizes, starts_at=starts_at,
                        reopen=not waiting, raised=bool(waiting) and capacity > target, gate=gate)
            actions += [Event.sliced.set(target), Event.seat_shards.set(len(sizes))]
            condition &= (Event.sliced == sliced) & (Event.seat_shards == count)
        # PynamoDB adds "version = :expected" and "ADD version 1": the check and the change are one write.
        transaction.update(EVENT, Event(*Event.key_for(event_id), version=expected_version), actions=actions,
                           condition=condition, return_old_on_failure=True)
        transaction.save(OUTBOX, outbox_message(message_type=PROMOTION_REQUESTED, now=now,
                                                payload={"event_id": event_id}))
        transaction.commit()

    for _ in range(EDIT_MAX_ROUNDS):
        try:
            WRITE_POLICY.run(attempt, busy=lambda _: busy_error(
                "This event is being changed right now; nothing was saved. Try again."))
        except TransactionCancelled as cancelled:
            if cancelled.failed(EVENT):
                raw = cancelled.reasons[EVENT].raw_item
                if not raw:
                    raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
                # The failed write's own ALL_OLD image says why; no read.
                current = Event.from_raw_data(raw)
                if current.is_cancelled:
                    raise event_cancelled_error(current.cancelled_at) from None
                if current.version != expected_version:
                    raise RegistrationError(
                        "conflict",
                        f"{current.updated_by or 'Someone'} changed this event after you opened it "
                        f"(version {expected_version} → {current.version}). Nothing of yours was saved.",
                        current=event_to_dict(current, seats=shards.event_seat_counts(event_id)),
                        expected_version=expected_version,
                    ) from None
            # A slice below its shard's taken seats, or the counters moved since the read. The images say how
            # many seats the refused shards hold; a read explains the rest: too few seats, or try again.
            taken = shards.event_seat_counts(event_id).registered
            if taken > capacity:
                raise RegistrationError(
                    "invalid",
                    f"Capacity cannot go below the {taken} seats already taken.",
                    errors={"capacity": [_capacity_problem(taken)]},
                ) from None
            continue
        break
    else:
        raise busy_error("This event's seats are changing fast; nothing was saved. Try again.")
    try:
        promoted = waitlist_promote(event_id=event_id)
    except Exception:  # noqa: BLE001 - the edit is saved; the outbox message finishes the promotion
        logger.warning("promotion after editing event %s left to the outbox", event_id, exc_info=True)
        return EventUpdate(event_id, int(expected_version) + 1, promotion_pending=True)
    return EventUpdate(event_id, int(expected_version) + 1, promoted=promoted)


def _counters(event_id: str) -> EventSeats | None:
    try:
        return EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    except EventSeats.DoesNotExist:
        return None


def _capacity_problem(registered: int) -> str:
    people = "1 person is" if registered == 1 else f"{registered} people are"
    return (f"{people} registered, so the capacity must be at least {registered}. Seats already given are not "
            "taken back: to shrink the event further, those registrations must be cancelled first.")


# --- the event's cancellation -----------------------------------------------------------------------------
#
# Calling an event off: one transaction marks it cancelled wherever a write that admits someone looks, and
# queues its one notice to everyone registered.
#
# The transaction (labels in brackets):
#
#     [event]     ``cancelled_at`` set on the event's item, under "not cancelled yet" and the shard count the
#                 marks below were built from (so a re-slice meanwhile refuses it)
#     [seat_<k>]  the same ``cancelled_at`` on every seat shard: a seat and a waiting-list ticket are taken only
#                 under "not cancelled" on the shard they touch (``seating.shards.admitting``)
#     [message]   the cancellation notice, an ``EventMessage`` whose id is derived from the event alone
#                 (``attribute_not_exists``): one notice per event, whoever asks and with whatever key
#     [idempotency] the tap's record, born COMPLETED with the answer
#     [outbox]    ``EventCancellationRequested``: the relay fans the notice out to confirmed and waitlisted
#                 registrations a page at a time (messages/services.py), one mail per registration
#
# The promotion, a registration's cancel, an edit and the door write the event's item under "not cancelled", so
# after this commits nobody is promoted, admitted or re-sliced in. A second request (same key: the stored answer;
# a new key: the event's refused image says it is cancelled already) writes nothing and sends no mail.

# Outbox message type (settings.OUTBOX_HANDLERS): the notice's fan-out, by the same handler as staff messages.
CANCELLATION_REQUESTED = "EventCancellationRequested"
# Rounds whose read went stale (an edit re-sliced the shards) before "busy".
CANCEL_EVENT_MAX_ROUNDS = 8


def event_cancel_once(*, event_id: str, user_id: str, cancelled_by: str, idempotency_key: str, fingerprint: str,
                      now: datetime | None = None, sleep: Callable[[float], None] = time.sleep) -> StoredOutcome:
    """Cancel ``event_id`` once: 200 ``{event_id, status: "cancelled", cancelled_at, cancelled_by, notice}``.

    One transaction (see the module doc) marks the event and its shards, writes the notice and its outbox message
    and the tap's record. The same key replays the first answer; another key on a cancelled event answers the
    same 200 (from the refused write's image) and queues nothing. Raises RegistrationError: 'not_found',
    'unprocessable' (the key was used for another request), 'busy'.
    """
    now = now or utcnow()
    conflicts = conflict_backoff(sleep, detail="This event is changing right now; nothing was cancelled. Try again.")
    # The conflict pauses raise 'busy' themselves once spent: the loop leaves them room to.
    for _ in range(CANCEL_EVENT_MAX_ROUNDS + MAX_CONFLICTS):
        try:
            event = EventCancellation.get(*EventCancellation.key_for(event_id), consistent_read=True)
        except EventCancellation.DoesNotExist:
            raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
        response = StoredResponse.json(cancellation_to_dict(event_id=event_id, cancelled_at=now,
                                                            cancelled_by=cancelled_by), status=200)
        cancelled = commit_tap(_cancel_transaction(event, now=now, cancelled_by=cancelled_by), user_id=user_id,
                               key=idempotency_key, fingerprint=fingerprint, response=response, now=now)
        if isinstance(cancelled, StoredOutcome):
            return cancelled
        if cancelled is UNKNOWN_OUTCOME:
            conflicts.pause()  # an applied round is found by the next one: the record replays it
            continue
        if cancelled is not None:
            if cancelled.failed(EVENT):
                image = cancelled.reasons[EVENT].raw_item
                if not image:
                    raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
                if (when := cancelled_in_image(image)) is not None:
                    return _already_cancelled(EventCancellation.from_raw_data(image), when, user_id=user_id,
                                              key=idempotency_key, fingerprint=fingerprint, now=now, sleep=sleep)
                continue  # re-sliced since the read: read again
            if cancelled.only_conflicts:
                conflicts.pause()
                continue
            raise
        return StoredOutcome(response)
    raise busy_error("This event is changing right now; nothing was cancelled. Try again.")


def _cancel_transaction(event: EventCancellation, *, now: datetime, cancelled_by: str) -> LabelledTransaction:
    event_id = event.event_id
    count = int(event.seat_shards or 0)
    transaction = LabelledTransaction()
    transaction.update(
        EVENT, EventCancellation(*EventCancellation.key_for(event_id)),
        actions=[EventCancellation.cancelled_at.set(now), EventCancellation.cancelled_by.set(cancelled_by)],
        condition=(EventCancellation.pk.exists() & EventCancellation.cancelled_at.does_not_exist()
                   & (EventCancellation.seat_shards == count)),
        return_old_on_failure=True,
    )
    _mark_shards(transaction, event_id=event_id, count=count, now=now)
    message_id = EventMessage.cancellation_id_for(event_id)
    transaction.save(MESSAGE, EventMessage(
        *EventMessage.key_for(event_id, message_id), event_id=event_id, message_id=message_id,
        kind=EventMessage.CANCELLATION, audience=REGISTRANTS, subject=f"Cancelled: {event.title or ''}".strip(),
        body="", created_at=now, created_by=cancelled_by, registered_before=now, partition=0, pages=0, queued=0,
        **EventMessage.index_fields(event_id, message_id, now),
    ), condition=EventMessage.pk.does_not_exist())
    transaction.save(OUTBOX, outbox_message(message_type=CANCELLATION_REQUESTED, now=now,
                                            payload={"event_id": event_id, "message_id": message_id}))
    return transaction


def _mark_shards(transaction: LabelledTransaction, *, event_id: str, count: int, now: datetime) -> None:
    """The cancellation's mark on every seat shard (at most ``shards.MAX_SHARDS``, so the transaction stays
    within DynamoDB's 100 items): where the seat's and the join's conditions look for it."""
    for shard in range(count):
        transaction.update(f"{SEAT}_{shard}", SeatShard(*SeatShard.key_for(event_id, shard)),
                           actions=[SeatShard.cancelled_at.set(now)], condition=SeatShard.pk.exists())


def _already_cancelled(event: EventCancellation, when: datetime, *, user_id: str, key: str, fingerprint: str,
                       now: datetime, sleep: Callable[[float], None]) -> StoredOutcome:
    """The event was cancelled before this tap (by another key or person): the same answer, stored under this
    key in a transaction of its own, and nothing else written."""
    body = cancellation_to_dict(event_id=event.event_id, cancelled_at=when, cancelled_by=event.cancelled_by or "")
    response = StoredResponse.json(body, status=200)
    first = remember_answer(user_id=user_id, key=key, fingerprint=fingerprint, response=response, now=now,
                            sleep=sleep)
    if first is not None:
        return StoredOutcome(stored_answer(first, fingerprint), replayed=True)
    return StoredOutcome(response)
