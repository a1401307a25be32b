"""Calling an event off: one transaction marks it cancelled wherever a write that admits someone looks, and
queues its one notice to everyone registered.

The transaction (labels in brackets):

    [event]     ``cancelled_at`` set on the event's item, under "not cancelled yet" and the shard count the
                marks below were built from (so a re-slice meanwhile refuses it)
    [seat_<k>]  the same ``cancelled_at`` on every seat shard: a seat and a waiting-list ticket are taken only
                under "not cancelled" on the shard they touch (``seating.shards.admitting``)
    [message]   the cancellation notice, an ``EventMessage`` whose id is derived from the event alone
                (``attribute_not_exists``): one notice per event, whoever asks and with whatever key
    [idempotency] the tap's record, born COMPLETED with the answer
    [outbox]    ``EventCancellationRequested``: the relay fans the notice out to confirmed and waitlisted
                registrations a page at a time (services/messages.py), one mail per registration

The promotion, a registration's cancel, an edit and the door write the event's item under "not cancelled", so
after this commits nobody is promoted, admitted or re-sliced in. A second request (same key: the stored answer;
a new key: the event's refused image says it is cancelled already) writes nothing and sends no mail.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from registrations.errors import RegistrationError, cancelled_in_image
from registrations.models import EventCancellation, EventMessage, SeatShard
from registrations.serializers import cancellation_to_dict
from registrations.services.common import (
    EVENT,
    IDEMPOTENCY,
    MAX_CONFLICTS,
    OUTBOX,
    SEAT,
    StoredOutcome,
    busy_error,
    conflict_backoff,
    remember_answer,
    stored_answer,
)
from registrations.services.messages import MESSAGE, REGISTRANTS
from tems.clock import utcnow
from tems.idempotency import StoredResponse, add_completed_record
from tems.outbox import outbox_message
from tems.transactions import UNKNOWN_OUTCOME, LabelledTransaction, commit_round

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
        transaction = _cancel_transaction(event, now=now, cancelled_by=cancelled_by)
        add_completed_record(transaction, user_id=user_id, key=idempotency_key, fingerprint=fingerprint,
                             response=response, now=now)
        cancelled = commit_round(transaction)
        if cancelled is UNKNOWN_OUTCOME:
            conflicts.pause()  # an applied round is found by the next one: the record replays it
            continue
        if cancelled is not None:
            if cancelled.failed(IDEMPOTENCY):
                return StoredOutcome(stored_answer(cancelled.reasons[IDEMPOTENCY].raw_item, fingerprint),
                                     replayed=True)
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
