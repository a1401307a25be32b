"""Event writes: the version-checked edit that hands freed seats to the waiting list, and the event's
cancellation. Creating an event is ``registrations.events.creation``'s; its entry points are re-exported here so
callers keep one module of event writes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from registrations.errors import RegistrationError, cancelled_in_image, event_cancelled_error
from registrations.events import index
from registrations.events.creation import (
    DETAILS,
    event_api_location,
    event_copy_once,
    event_create,
    event_create_once,
    event_details,
    new_event_id,
)
from registrations.events.models import MAX_CANCEL_REASON_CHARS, Event, EventCancellation
from registrations.messages.models import EventMessage
from registrations.messages.services import MESSAGE, REGISTRANTS
from registrations.seating import holds, marks, shards
from registrations.seating.gate import GateBusy, gate_get
from registrations.seating.models import SeatShard
from registrations.seating.shards import add_reslice, planned_sizes
from registrations.serializers import cancellation_to_dict, event_to_dict
from registrations.services.promotion import waitlist_promote
from registrations.write_rules import (
    EVENT,
    MAX_CONFLICTS,
    OUTBOX,
    SEAT,
    WRITE_POLICY,
    StoredOutcome,
    busy_error,
    commit_tap,
    conflict_backoff,
    remember_outcome,
)
from tems import audit
from tems.audit.services import changed_fields
from tems.audit.wording import EVENT_CANCELLED, EVENT_EDITED
from tems.clock import utcnow
from tems.idempotency import StoredResponse
from tems.outbox import OutboxMessage, outbox_message
from tems.text import untypable
from tems.transactions import UNKNOWN_OUTCOME, LabelledTransaction, TransactionCancelled

logger = logging.getLogger(__name__)

__all__ = ["DETAILS", "event_api_location", "event_cancel_once", "event_copy_once", "event_create",
           "event_create_once", "event_update", "new_event_id",
           "waitlist_promotion_requested"]

# The outbox message an event edit writes in its own transaction: "fill free seats from the waiting list".
PROMOTION_REQUESTED = "WaitlistPromotionRequested"
# Edits whose seat counters moved between their read and their write (registrations keep coming): read again.
EDIT_MAX_ROUNDS = 8


def waitlist_promotion_requested(message: OutboxMessage) -> None:
    """Outbox handler of ``WaitlistPromotionRequested``: finish filling the event's free seats (idempotent)."""
    waitlist_promote(event_id=message.data["event_id"])


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
    actor: audit.Actor | None = None,
    **details: Any,
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
    automatic promotion; hours: offers with that window, for seats freed from now on). ``details`` (any of
    ``DETAILS``) replace the event's: one not given is removed. The same transaction replaces the event's facets
    (registrations.events.index), known from the event as read under the version the edit is conditioned on.
    ``actor`` (``tems.audit.actor_of``): the audit entry of the fields it changed, in the same transaction.
    """
    now = utcnow()
    details = event_details(details)

    def attempt() -> bool:
        # The event and its shards are read only to propose the new slices and to know the facets to replace:
        # every shard's slice is written under "taken <= slice" and the event under "counters as read" and its
        # version, so a stale read fails, never oversells or leaves a facet behind. False: nothing was written
        # (the outer lanes could not be reopened), read everything again.
        stored = _stored(event_id)
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
        for name, value in details.items():
            attribute = getattr(Event, name)
            actions.append(attribute.remove() if value is None else attribute.set(value))
        # A cancelled event is not edited: a re-slice would write shards without the cancellation's mark.
        condition = Event.pk.exists() & Event.cancelled_at.does_not_exist()
        if stored is not None:
            count = int(stored.seat_shards)
            sliced = int(stored.sliced)
            try:
                gate = gate_get(event_id=event_id)
            except GateBusy:
                raise busy_error("This event's seats are changing right now; nothing was saved. Try again.") from None
            if gate is None:  # the gate is born with the event: it is being deleted (a lab scratch event)
                raise RegistrationError("not_found", f"There is no event with id {event_id!r}.")
            shards_read = shards.shards_get(event_id=event_id, count=count)
            waiting = sum(int(shard.waiting or 0) for shard in shards_read)
            if not waiting and not marks.reopen_outer_lanes(event_id=event_id, count=count, gate=gate):
                # Someone joined a lane past the inner ones since the read, or the gate moved: start over from the
                # reads (a re-read of the shards alone could find them gone again and reopen the gate beside a lane
                # that stayed closed).
                return False
            # A raise while people wait stays unsliced: waitlist_promote hands it to them before any newcomer.
            # With nobody waiting the new slices are for newcomers: the waiting list's gate opens (under the
            # condition, on every shard, that nobody joined its lane since the read).
            target = capacity if not waiting else min(sliced, capacity)
            floor = shards.seat_only_floor(shards_read)
            if target < floor and sum(int(shard.taken) for shard in shards_read) <= capacity:
                # A re-slice writes the lanes only (the shards past them keep their slices): a cut is bounded
                # by the lanes' free seats.
                problem = (f"Right now this event's capacity can go down to {floor} at the lowest: the other "
                           "seats are spread over parts of the event that only fill as people register.")
                raise RegistrationError("invalid", problem, errors={"capacity": [problem]})
            sizes = planned_sizes(target=target, count=count, shards_read=shards_read)
            add_reslice(transaction, event_id=event_id, shards_read=shards_read, sizes=sizes, starts_at=starts_at,
                        reopen=not waiting, raised=bool(waiting) and capacity > target, gate=gate,
                        window=(details["registration_opens_at"], details["registration_closes_at"]))
            actions += [Event.sliced.set(target), Event.seat_shards.set(len(sizes))]
            condition &= (Event.sliced == sliced) & (Event.seat_shards == count)
            if stored.is_draft:  # shards added marked must not land after a publication removed the marks
                condition &= Event.state == Event.DRAFT
            if stored.gsi1pk == Event.COLLECTION and int(stored.version) == expected_version:
                edited = Event(*Event.key_for(event_id), event_id=event_id, title=title, location=location,
                               starts_at=starts_at, **details)
                index.replace_facets(transaction, stored=stored, edited=edited)
            # The fields as read are the ones the edit replaces: the version condition refuses it otherwise.
            before, after = changed_fields(_edited_fields(stored), _edited_fields(
                stored, title=title, description=description, location=location, starts_at=starts_at,
                capacity=capacity, reminder_hours=reminder_hours, offer_hours=offer_hours, **details))
            if after:  # a save that changes no field (a doubled post, merged onto itself) is nothing to log
                audit.add_entry(transaction, actor=actor, action=EVENT_EDITED, team=stored.team, event_id=event_id,
                                before=before, after=after, now=now)
        # PynamoDB adds "version = :expected" and "ADD version 1": the check and the change are one write.
        transaction.update(EVENT, Event(*Event.key_for(event_id), version=expected_version), actions=actions,
                           condition=condition, return_old_on_failure=True)
        transaction.save(OUTBOX, outbox_message(message_type=PROMOTION_REQUESTED, now=now,
                                                payload={"event_id": event_id}))
        transaction.commit()
        return True

    # The shards past the lanes copy the start and window: held while the edit's transaction decides, then given
    # what is stored (seating.holds), so none admits anyone by copies that are no longer the event's.
    token = _hold_copies(event_id=event_id, starts_at=starts_at, details=details)
    try:
        for _ in range(EDIT_MAX_ROUNDS):
            try:
                applied = WRITE_POLICY.run(attempt, busy=lambda _: busy_error(
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
            if applied:
                break
        else:
            raise busy_error("This event's seats are changing fast; nothing was saved. Try again.")
    finally:
        if token is not None:
            _release_copies(event_id=event_id, token=token)
    try:
        promoted = waitlist_promote(event_id=event_id)
    except Exception:  # noqa: BLE001 - the edit is saved; the outbox message finishes the promotion
        logger.warning("promotion after editing event %s left to the outbox", event_id, exc_info=True)
        return EventUpdate(event_id, int(expected_version) + 1, promotion_pending=True)
    return EventUpdate(event_id, int(expected_version) + 1, promoted=promoted)


def _edited_fields(event: Event, **edit: Any) -> dict[str, Any]:
    """The fields an edit sets, as ``event`` holds them, or as ``edit`` sets them (None: kept as it is)."""
    fields = {"title": event.title, "description": event.description, "location": event.location,
              "starts_at": event.starts_at, "capacity": int(event.capacity),
              "reminder_hours": event.reminder_hours_or_default, "offer_hours": int(event.offer_hours or 0),
              **{name: getattr(event, name) for name in DETAILS}}
    for name, value in edit.items():
        if name in ("reminder_hours", "offer_hours"):
            if value is not None:
                fields[name] = int(value)
        elif name in DETAILS:
            fields[name] = value or None
        else:
            fields[name] = value
    return fields


def _hold_copies(*, event_id: str, starts_at: datetime, details: dict[str, Any]) -> str | None:
    """Hold the event's shards past its lanes if it has some and the edit changes their copies; the token."""
    stored = _stored(event_id)
    if stored is None or not holds.needed(count=int(stored.seat_shards or 0)):
        return None
    if (stored.starts_at, stored.registration_opens_at, stored.registration_closes_at) == (
            starts_at, details["registration_opens_at"], details["registration_closes_at"]):
        return None
    return holds.hold(event_id=event_id, count=int(stored.seat_shards))


def _release_copies(*, event_id: str, token: str) -> None:
    try:
        holds.release(event_id=event_id, token=token)
    except Exception:  # noqa: BLE001 - the edit stands; the hold's outbox message releases the shards
        logger.warning("releasing the held shards of event %s left to the outbox", event_id, exc_info=True)


def _stored(event_id: str) -> Event | None:
    try:
        return Event.get(*Event.key_for(event_id), consistent_read=True)
    except Event.DoesNotExist:
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


def cancel_reason_checked(reason: str | None) -> str:
    """The reason as stored (trimmed, line breaks as ``\\n``; "" for none), or RegistrationError('invalid') with a
    message for the person who typed it."""
    text = (reason or "").replace("\r\n", "\n").replace("\r", "\n").strip()
    problem = None
    if untypable(text):
        problem = "The reason contains characters that cannot be sent (control characters); remove them."
    elif len(text) > MAX_CANCEL_REASON_CHARS:
        problem = (f"The reason is {len(text):,} characters long; at most {MAX_CANCEL_REASON_CHARS} fit in the "
                   "notice. Shorten it.")
    if problem:
        raise RegistrationError("invalid", problem, errors={"reason": [problem]})
    return text


def event_cancel_once(*, event_id: str, user_id: str, cancelled_by: str, idempotency_key: str, fingerprint: str,
                      reason: str = "", now: datetime | None = None, actor: audit.Actor | None = None,
                      sleep: Callable[[float], None] = time.sleep) -> StoredOutcome:
    """Cancel ``event_id`` once: 200 ``{event_id, status: "cancelled", cancelled_at, cancelled_by, reason, notice}``.

    One transaction (see the module doc) marks the event and its shards, stores the optional ``reason`` on the
    event and on the notice (every recipient's mail carries it), writes the notice's outbox message and the tap's
    record. The same key replays the first answer; another key on a cancelled event answers the same 200 (from the
    refused write's image: the first reason stands) and queues nothing. Raises RegistrationError: 'invalid' (the
    reason: too long, or characters nobody types), 'not_found', 'unprocessable' (the key was used for another
    request), 'busy'. ``actor`` (``tems.audit.actor_of``): the audit entry, in the same transaction.
    """
    reason = cancel_reason_checked(reason)
    now = now or utcnow()
    conflicts = conflict_backoff(sleep, detail="This event is changing right now; nothing was cancelled. Try again.")
    # The conflict pauses raise 'busy' themselves once spent: the loop leaves them room to.
    for _ in range(CANCEL_EVENT_MAX_ROUNDS + MAX_CONFLICTS):
        try:
            event = EventCancellation.get(*EventCancellation.key_for(event_id), consistent_read=True)
        except EventCancellation.DoesNotExist:
            raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
        response = StoredResponse.json(cancellation_to_dict(event_id=event_id, cancelled_at=now,
                                                            cancelled_by=cancelled_by, reason=reason), status=200)
        # The shards past the lanes take the mark first (keeping one already there): they refuse a little early,
        # never admit after the event's transaction, which marks the lanes with the event.
        marks.write_seat_only(event_id=event_id, count=int(event.seat_shards or 0),
                              actions=lambda: [SeatShard.cancelled_at.set(SeatShard.cancelled_at | now)])
        transaction = _cancel_transaction(event, now=now, cancelled_by=cancelled_by, reason=reason)
        audit.add_entry(transaction, actor=actor, action=EVENT_CANCELLED, team=event.team, event_id=event_id,
                        idempotency_key=idempotency_key, now=now)
        cancelled = commit_tap(transaction,
                               user_id=user_id, key=idempotency_key, fingerprint=fingerprint, response=response,
                               now=now)
        if isinstance(cancelled, StoredOutcome):
            _marks_follow(event_id, count=int(event.seat_shards or 0))
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
                    _marks_follow(event_id, count=int(event.seat_shards or 0))
                    return _already_cancelled(EventCancellation.from_raw_data(image), when, user_id=user_id,
                                              key=idempotency_key, fingerprint=fingerprint, now=now, sleep=sleep)
                continue  # re-sliced since the read: read again
            if cancelled.only_conflicts:
                conflicts.pause()
                continue
            raise
        _marks_follow(event_id, count=int(event.seat_shards or 0))
        return StoredOutcome(response)
    raise busy_error("This event is changing right now; nothing was cancelled. Try again.")


def _marks_follow(event_id: str, *, count: int) -> None:
    """The shards past the lanes (of ``count`` shards, as read) carry the event's own ``cancelled_at`` (a
    concurrent cancellation's pre-mark may have landed first): set from the event as read now. Idempotent."""
    if not shards.seat_only(count):
        return  # every shard is a lane: the event's transaction marked them all
    event = EventCancellation.get(*EventCancellation.key_for(event_id), consistent_read=True)
    count = int(event.seat_shards or 0)
    if event.cancelled_at is None or not shards.seat_only(count):
        return
    marks.write_seat_only(event_id=event_id, count=count,
                          actions=lambda: [SeatShard.cancelled_at.set(event.cancelled_at)])


def _cancel_transaction(event: EventCancellation, *, now: datetime, cancelled_by: str,
                        reason: str) -> LabelledTransaction:
    event_id = event.event_id
    count = int(event.seat_shards or 0)
    transaction = LabelledTransaction()
    condition = (EventCancellation.pk.exists() & EventCancellation.cancelled_at.does_not_exist()
                 & (EventCancellation.seat_shards == count))
    if event.version is not None:  # the facets removed below are the ones this version wrote
        condition &= EventCancellation.version == int(event.version)
    # A publication (which puts the facets without raising the version) since the read: read again.
    condition &= (EventCancellation.collection == event.collection if event.collection is not None
                  else EventCancellation.collection.does_not_exist())
    listed = event.collection == Event.COLLECTION
    actions = [EventCancellation.cancelled_at.set(now), EventCancellation.cancelled_by.set(cancelled_by)]
    if reason:
        actions.append(EventCancellation.cancel_reason.set(reason))
    transaction.update(
        EVENT, EventCancellation(*EventCancellation.key_for(event_id)),
        actions=actions, condition=condition, return_old_on_failure=True,
    )
    if listed:
        index.remove_facets(transaction, event_id=event_id, facets=index.facets_of(
            title=event.title or "", category=event.category, organizer=event.organizer, public=event.public))
    _mark_shards(transaction, event_id=event_id, count=count, now=now)
    message_id = EventMessage.cancellation_id_for(event_id)
    transaction.save(MESSAGE, EventMessage(
        *EventMessage.key_for(event_id, message_id), event_id=event_id, message_id=message_id,
        kind=EventMessage.CANCELLATION, audience=REGISTRANTS, subject=f"Cancelled: {event.title or ''}".strip(),
        body=reason, created_at=now, created_by=cancelled_by, registered_before=now, partition=0, pages=0,
        queued=0, **EventMessage.index_fields(event_id, message_id, now),
    ), condition=EventMessage.pk.does_not_exist())
    payload = {"event_id": event_id, "message_id": message_id}
    if reason:
        payload["reason"] = reason
    transaction.save(OUTBOX, outbox_message(message_type=CANCELLATION_REQUESTED, now=now, payload=payload))
    return transaction


def _mark_shards(transaction: LabelledTransaction, *, event_id: str, count: int, now: datetime) -> None:
    """The cancellation's mark on every inner lane (at most ``shards.MAX_LANES``, so the transaction stays within
    DynamoDB's 100 items): where the seat's and the join's conditions look for it. The shards past the lanes are
    marked before this transaction and set to its mark after it (``marks.write_seat_only``)."""
    for shard in range(shards.lane_count(count)):
        transaction.update(f"{SEAT}_{shard}", SeatShard(*SeatShard.key_for(event_id, shard)),
                           actions=[SeatShard.cancelled_at.set(now)], condition=SeatShard.pk.exists())


def _already_cancelled(event: EventCancellation, when: datetime, *, user_id: str, key: str, fingerprint: str,
                       now: datetime, sleep: Callable[[float], None]) -> StoredOutcome:
    """The event was cancelled before this tap (by another key or person): the same answer, stored under this
    key in a transaction of its own, and nothing else written."""
    body = cancellation_to_dict(event_id=event.event_id, cancelled_at=when, cancelled_by=event.cancelled_by or "",
                                reason=event.cancel_reason)
    response = StoredResponse.json(body, status=200)
    return remember_outcome(user_id=user_id, key=key, fingerprint=fingerprint, response=response, now=now,
                            sleep=sleep)
