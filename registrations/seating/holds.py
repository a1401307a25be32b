"""A hold on the shards past the lanes while an edit changes what they copy (the start, the window, the questions).

The lanes take an edit's copies in the edit's own transaction; the shards past them (``marks``) do not fit in it.
Written after it, they would admit someone by the old copies in between; written before it, by copies that an
edit refused by its own conditions never made true. So the edit holds them first: each gets the edit's token in
``held``, and a seat is taken only on a shard holding none (``shards.admitting``). Then the edit's transaction;
then ``release`` writes on them what the event and its questions say *now* (read after the edit, under the
condition that they still say it) and takes the token away. Whether the edit committed or not, the copies that
come out are the stored ones.

A release lost with its process is done by the outbox: ``hold`` first writes a ``SeatCopiesRequested`` message due
``RELEASE_AFTER`` later, and its handler is ``release`` again (idempotent: the copies are SETs of what is stored,
the token's removal a set DELETE). A held shard with room keeps the waiting list's gate open
(``router.close_gate`` pauses and looks again), so nobody joins the waiting list beside it.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from registrations.events.models import Event
from registrations.questions.models import EventQuestions
from registrations.seating import marks, shards
from registrations.seating.models import SeatShard
from registrations.write_rules import busy_error
from tems.clock import utcnow
from tems.outbox import OutboxMessage, outbox_message
from tems.transactions import LabelledTransaction, TransactionCancelled

SEAT_COPIES_REQUESTED = "SeatCopiesRequested"
# When the outbox releases a hold whose edit did not: long after an edit's own release (milliseconds after its
# transaction), short enough that a student meets a held shard as a busy moment, not as a closed event.
RELEASE_AFTER = timedelta(seconds=30)
# Rounds of a release whose read of the event went stale (another edit landed in between) before 'busy'.
RELEASE_ROUNDS = 5


def needed(*, count: int) -> bool:
    """Whether an event of ``count`` shards has shards past its lanes (an edit of its copies holds them)."""
    return bool(shards.seat_only(count))


def hold(*, event_id: str, count: int, now: datetime | None = None) -> str:
    """Hold the event's shards past its lanes for one edit; returns the token ``release`` takes away."""
    now = now or utcnow()
    token = uuid.uuid4().hex
    transaction = LabelledTransaction()
    transaction.save("outbox", outbox_message(message_type=SEAT_COPIES_REQUESTED, now=now + RELEASE_AFTER,
                                              payload={"event_id": event_id, "token": token}))
    transaction.commit()
    marks.write_seat_only(event_id=event_id, count=count, actions=lambda: [SeatShard.held.add({token})])
    return token


def add_copy_request(transaction: LabelledTransaction, *, event_id: str, now: datetime) -> None:
    """A change that only OPENS the shards past the lanes (a publication lifting the draft mark) writes this in its
    own transaction instead of a hold: a shard that still refuses a moment longer breaks no rule, and the outbox
    copies the stored event onto them if the change's own ``release`` is lost with its process."""
    transaction.save("copies", outbox_message(message_type=SEAT_COPIES_REQUESTED, now=now,
                                              payload={"event_id": event_id, "token": None}))


def release(*, event_id: str, token: str | None = None) -> None:
    """Copy the event's start, window, questions version and draft mark, as stored, onto its shards past the
    lanes, and take ``token``'s hold away. Raises RegistrationError('busy') when the event kept changing."""
    for _ in range(RELEASE_ROUNDS):
        if _copied(event_id=event_id, token=token):
            return
    raise busy_error("This event is changing fast; its seats open again in a moment.")


def _copied(*, event_id: str, token: str | None) -> bool:
    """One round of ``release``: True when done, False when the event or its questions moved since the read."""
    try:
        event = Event.get(*Event.key_for(event_id), consistent_read=True)
    except Event.DoesNotExist:
        return True  # deleted (a lab scratch event): nothing to copy onto
    count = int(event.seat_shards or 0)
    if not needed(count=count):
        return True
    try:
        questions = int(EventQuestions.get(*EventQuestions.key_for(event_id), consistent_read=True).version)
    except EventQuestions.DoesNotExist:
        questions = None
    copies = [(SeatShard.starts_at, event.starts_at), (SeatShard.opens_at, event.registration_opens_at),
              (SeatShard.closes_at, event.registration_closes_at), (SeatShard.questions, questions),
              (SeatShard.draft, True if event.is_draft else None)]

    def actions() -> list:
        done = [attribute.remove() if value is None else attribute.set(value) for attribute, value in copies]
        return done + ([SeatShard.held.delete({token})] if token else [])

    def still(transaction: LabelledTransaction) -> None:
        # What was copied is still what is stored: an edit landing in between fails the group, and the next
        # round copies its values.
        transaction.condition_check("event", Event, *Event.key_for(event_id),
                                    condition=Event.version.does_not_exist() if event.version is None
                                    else Event.version == int(event.version))
        transaction.condition_check("questions", EventQuestions, *EventQuestions.key_for(event_id),
                                    condition=EventQuestions.version.does_not_exist() if questions is None
                                    else EventQuestions.version == questions)

    try:
        marks.write_seat_only(event_id=event_id, count=count, actions=actions, check=still)
    except TransactionCancelled:
        return False
    return True


def seat_copies_requested(message: OutboxMessage) -> None:
    """Outbox handler of ``SeatCopiesRequested``: the release of a hold, if its edit did not (idempotent)."""
    release(event_id=message.data["event_id"], token=message.data["token"])
