"""Publishing a draft: one transaction, once per tap, whoever else taps at the same moment.

The transaction (labels in brackets):

    [event]     the draft's state removed and who published it set, under "still a draft", "not cancelled" and
                the version and shard count it was read at (its finding aids and shard marks are built from them)
    [seat_<k>]  the draft mark removed from every seat shard (``seating.shards.admitting`` refuses while it is there)
    [facet_<i>] the event's finding aids, so lists, searches and the calendar meet it from this commit on
    [idempotency] the tap's record, born COMPLETED with the answer

Two approvers at once: the event's condition lets one through; the other's refused write returns the event's image,
which names who published it (the one read that explains, never decides).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from registrations.errors import RegistrationError, event_cancelled_error
from registrations.events import index
from registrations.events.models import Event, EventPublication
from registrations.seating import holds, marks
from registrations.seating.models import SeatShard
from registrations.serializers import publication_to_dict
from registrations.write_rules import (
    EVENT,
    MAX_CONFLICTS,
    SEAT,
    StoredOutcome,
    busy_error,
    commit_tap,
    conflict_backoff,
)
from tems import audit
from tems.audit.wording import EVENT_PUBLISHED, EVENT_SENT_BACK
from tems.clock import utcnow
from tems.idempotency import StoredResponse
from tems.text import untypable
from tems.transactions import UNKNOWN_OUTCOME, LabelledTransaction

logger = logging.getLogger(__name__)

# Rounds whose read went stale (the draft was edited in between) before "busy".
PUBLISH_MAX_ROUNDS = 8
ALREADY_PUBLISHED = "already_published"


def event_publish_once(*, event_id: str, user_id: str, published_by: str, idempotency_key: str, fingerprint: str,
                       actor: audit.Actor | None = None, now: datetime | None = None,
                       sleep: Callable[[float], None] = time.sleep) -> StoredOutcome:
    """Publish the draft ``event_id`` once: 200 ``{event_id, status: "published", published_at, published_by}``.

    The same key replays the first answer byte for byte. Raises RegistrationError: 'conflict' with reason
    'already_published' and ``published_by`` (someone published it first: "Already published by <name>"), or
    reason 'event_cancelled'; 'not_found'; 'unprocessable' (the key was used for another request); 'busy'.
    """
    now = now or utcnow()
    conflicts = conflict_backoff(sleep, detail="This event is changing right now; nothing was published. Try again.")
    for _ in range(PUBLISH_MAX_ROUNDS + MAX_CONFLICTS):
        event = _read(event_id)
        response = StoredResponse.json(publication_to_dict(event_id=event_id, published_at=now,
                                                           published_by=published_by), status=200)
        transaction = _publish_transaction(event, now=now, published_by=published_by)
        audit.add_entry(transaction, actor=actor, action=EVENT_PUBLISHED, team=event.team, event_id=event_id,
                        idempotency_key=idempotency_key, now=now)
        refused = commit_tap(transaction, user_id=user_id,
                             key=idempotency_key, fingerprint=fingerprint, response=response, now=now)
        if isinstance(refused, StoredOutcome):
            return refused
        if refused is UNKNOWN_OUTCOME:
            conflicts.pause()  # an applied round is found by the next one: the record replays it
            continue
        if refused is None:
            _open_seat_only(event)
            return StoredOutcome(response)
        if refused.failed(EVENT):
            _explain(event_id, refused.reasons[EVENT].raw_item)
            continue  # still a draft: edited or re-sliced since the read, read again
        if refused.only_conflicts:
            conflicts.pause()
            continue
        raise refused
    raise busy_error("This event is changing right now; nothing was published. Try again.")


def _open_seat_only(event: Event) -> None:
    if not holds.needed(count=int(event.seat_shards or 0)):
        return
    try:
        holds.release(event_id=event.event_id)
    except Exception:  # noqa: BLE001 - published; the copy request in its transaction opens them
        logger.warning("opening the shards of event %s past its lanes left to the outbox", event.event_id,
                       exc_info=True)


def _read(event_id: str) -> Event:
    try:
        return Event.get(*Event.key_for(event_id), consistent_read=True)
    except Event.DoesNotExist:
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None


def still_a_draft(event: Event):
    """The publication's condition on the event's item, built from the event as read."""
    return ((EventPublication.state == Event.DRAFT) & EventPublication.cancelled_at.does_not_exist()
            & (EventPublication.version == int(event.version))
            & (EventPublication.seat_shards == int(event.seat_shards or 0)))


def _publish_transaction(event: Event, *, now: datetime, published_by: str) -> LabelledTransaction:
    transaction = LabelledTransaction()
    transaction.update(EVENT, EventPublication(*EventPublication.key_for(event.event_id)), actions=[
        EventPublication.state.remove(), EventPublication.published_at.set(now),
        EventPublication.published_by.set(published_by), EventPublication.collection.set(Event.COLLECTION),
        EventPublication.sent_back_note.remove(), EventPublication.sent_back_by.remove(),
    ], condition=EventPublication.pk.exists() & still_a_draft(event), return_old_on_failure=True)
    # The lanes lose the mark with the event; the shards past them right after the commit (``holds.release``),
    # or by the outbox if this process is lost: lifting a mark only opens, so a shard refusing a moment longer is
    # safe.
    marks.add_to_lanes(transaction, event_id=event.event_id, count=int(event.seat_shards or 0),
                       actions=lambda: [SeatShard.draft.remove()], label=SEAT)
    if holds.needed(count=int(event.seat_shards or 0)):
        holds.add_copy_request(transaction, event_id=event.event_id, now=now)
    index.add_facets(transaction, event)
    return transaction


def _explain(event_id: str, image: dict | None) -> None:
    """Raise why the event's condition refused, from its ALL_OLD image; return when it is still a draft."""
    if not image:
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.")
    current = EventPublication.from_raw_data(image)
    if current.cancelled_at is not None:
        raise event_cancelled_error(current.cancelled_at)
    if current.state != Event.DRAFT:
        who = current.published_by or "someone else"
        raise RegistrationError("conflict", f"Already published by {who}: students can see it now.",
                                reason=ALREADY_PUBLISHED, published_by=current.published_by or "",
                                **({"published_at": current.published_at.isoformat()}
                                   if current.published_at else {}))


# A note is a sentence or two to the society, not a letter.
MAX_NOTE_CHARS = 500


def send_back_note_checked(note: str | None) -> str:
    """The note as stored (trimmed), or RegistrationError('invalid') with a message for the approver."""
    text = (note or "").replace("\r\n", "\n").strip()
    problem = None
    if not text:
        problem = "Say what the team should change before it can be published."
    elif untypable(text):
        problem = "The note contains characters nobody types (control characters); remove them."
    elif len(text) > MAX_NOTE_CHARS:
        problem = f"The note is {len(text):,} characters long; at most {MAX_NOTE_CHARS} fit. Shorten it."
    if problem:
        raise RegistrationError("invalid", problem, errors={"note": [problem]})
    return text


def event_send_back_once(*, event_id: str, user_id: str, sent_back_by: str, note: str, idempotency_key: str,
                         fingerprint: str, actor: audit.Actor | None = None,
                         now: datetime | None = None) -> StoredOutcome:
    """Send the draft back to its team with ``note``: it stays a draft, and its team's pages show the note until
    it is published. One conditional write (still a draft, not cancelled) with the tap's record: 200
    ``{event_id, status: "draft", sent_back_by, note}``, replayed byte for byte. Raises RegistrationError:
    'invalid' (the note), 'conflict' (already published: who; or cancelled), 'not_found', 'busy'."""
    note = send_back_note_checked(note)
    now = now or utcnow()
    response = StoredResponse.json({"event_id": event_id, "status": "draft", "sent_back_by": sent_back_by,
                                    "note": note}, status=200)
    transaction = LabelledTransaction()
    transaction.update(EVENT, EventPublication(*EventPublication.key_for(event_id)), actions=[
        EventPublication.sent_back_note.set(note), EventPublication.sent_back_by.set(sent_back_by)],
        condition=(EventPublication.pk.exists() & (EventPublication.state == Event.DRAFT)
                   & EventPublication.cancelled_at.does_not_exist()), return_old_on_failure=True)
    if actor is not None:
        # The note is the approver's free text and may name people: the log records that it was sent back.
        audit.add_entry(transaction, actor=actor, action=EVENT_SENT_BACK, team=actor.team_of("event_id", event_id),
                        event_id=event_id, idempotency_key=idempotency_key, now=now)
    refused = commit_tap(transaction, user_id=user_id, key=idempotency_key, fingerprint=fingerprint,
                         response=response, now=now)
    if isinstance(refused, StoredOutcome):
        return refused
    if refused is None:
        return StoredOutcome(response)
    if refused is not UNKNOWN_OUTCOME and refused.failed(EVENT):
        _explain(event_id, refused.reasons[EVENT].raw_item)
    raise busy_error("This event is changing right now; nothing was sent. Try again.")
