"""Creating an event: once per tap, its seat shards, waiting-list queue and gate, first questions and finding
aids born with it in one transaction; a copy of an event is a creation prefilled from it."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial
from typing import Any

from registrations import selectors
from registrations.errors import RegistrationError
from registrations.events import index
from registrations.events.models import Event
from registrations.questions.models import EventQuestions
from registrations.questions.question_sets import (
    Question,
    QuestionSet,
    checked_questions,
    known,
    questions_get,
    questions_to_json,
)
from registrations.seating import marks, shards
from registrations.seating.gate import GATE, new_gate
from registrations.seating.models import SeatGate, SeatShard, WaitlistQueue
from registrations.seating.shards import SeatCounts
from registrations.serializers import event_to_dict
from registrations.write_rules import (
    EVENT,
    IDEMPOTENCY,
    QUEUE,
    WRITE_POLICY,
    StoredOutcome,
    busy_error,
    stored_answer,
)
from tems import audit
from tems.audit.wording import EVENT_CREATED
from tems.clock import utcnow
from tems.idempotency import StoredResponse, add_completed_record
from tems.teams.selectors import needs_approval
from tems.transactions import LabelledTransaction, TransactionCancelled

logger = logging.getLogger(__name__)

# The label of the questions item in the create transaction.
QUESTIONS = "questions"


def new_event_id(*, tap: str | None = None) -> str:
    """A fresh event id; for a person's tap (``tap``: who and with which key), the same id on every retry of it, so
    the shards a retry puts before the event's own transaction are the first attempt's (``marks.put_seat_only``)."""
    if tap is None:
        return uuid.uuid4().hex[:12]
    return uuid.uuid5(uuid.NAMESPACE_URL, f"tems:event:{tap}").hex[:12]



# The event's details beyond its title, time and seats, each optional (absent: not given); see Event.
DETAILS = ("ends_at", "time_zone", "map_url", "online_url", "category", "organizer", "public",
           "registration_opens_at", "registration_closes_at")


def event_details(details: dict[str, Any]) -> dict[str, Any]:
    unknown = set(details) - set(DETAILS)
    if unknown:
        raise TypeError(f"unknown event fields: {sorted(unknown)}")
    # Empty is absent, so an event never stores "" where a page asks "is there one?".
    return {name: details.get(name) or None for name in DETAILS}


def _new_event(*, event_id: str | None, title: str, description: str, location: str, starts_at: datetime,
               capacity: int, created_by: str, collection: str, expires_at: datetime | None = None,
               reminder_hours: int | None = None, offer_hours: int | None = None, team: str | None = None,
               draft: bool = False, **details: Any) -> Event:
    event_id = event_id or new_event_id()
    now = utcnow()
    # A draft is listed among the drafts only (the lab's scratch events keep their own listing).
    if draft and collection == Event.COLLECTION:
        collection = Event.DRAFTS
    return Event(
        *Event.key_for(event_id),
        event_id=event_id, title=title, description=description, location=location, starts_at=starts_at,
        capacity=capacity, created_at=now, created_by=created_by, updated_at=now, updated_by=created_by,
        gsi1pk=collection, gsi1sk=Event.listing_key(starts_at, event_id), expires_at=expires_at,
        seat_shards=shards.shard_count(capacity), sliced=capacity,
        reminder_hours=reminder_hours, offer_hours=offer_hours or None, team=team,
        state=Event.DRAFT if draft else None, **event_details(details),
    )


def _commit_event_create(event: Event, *, add_record: Callable[[LabelledTransaction], None] | None = None,
                         questions: tuple[Question, ...] = (),
                         add_audit: Callable[[LabelledTransaction], None] | None = None) -> None:
    """The event (its questions, and the tap's COMPLETED record) as one TransactWriteItems.

    A transaction and not a PutItem because botocore sends it with a ClientRequestToken and repeats the token
    on its own retries: after a lost answer DynamoDB answers the retry as a success instead of letting it fail
    the ``attribute_not_exists`` condition that the first attempt already satisfied (a false "already exists").
    ``questions`` (JSON, as EventQuestions holds them): the event is born with them at version 1, its shards too.
    """
    new = shards.new_shards(event_id=event.event_id, capacity=int(event.capacity), starts_at=event.starts_at,
                            opens_at=event.registration_opens_at, closes_at=event.registration_closes_at)
    for shard in new:
        if questions:  # a registration's answers are checked against this first version of them
            shard.questions = 1
        if event.is_draft:  # refused by every seat's and ticket's own condition until published
            shard.draft = True
    lanes = shards.lane_count(len(new))
    # The shards past the lanes do not fit in the event's transaction: they are put first, where nobody can reach
    # them until the event exists (a route learns the shard count from the event or from a shard of it).
    marks.put_seat_only(new[lanes:])

    def attempt() -> None:
        transaction = LabelledTransaction()
        transaction.save(EVENT, event, condition=Event.pk.does_not_exist())
        # The seat shards are born with the event, so a registration never meets an event without them.
        for shard in new[:lanes]:
            transaction.save(f"shard_{int(shard.shard)}", shard, condition=SeatShard.pk.does_not_exist())
        if questions:
            # Version 1 of the questions, as the questions page's first save writes it (attribute_not_exists).
            transaction.save(QUESTIONS, EventQuestions(
                *EventQuestions.key_for(event.event_id), event_id=event.event_id,
                questions=questions_to_json(questions), updated_at=event.created_at, updated_by=event.created_by),
                condition=EventQuestions.pk.does_not_exist())
        # And the queue the waiting list's lanes take their tickets from (registrations.seating.lanes, "Claims"),
        # and its gate (registrations.seating.gate).
        transaction.save(QUEUE, WaitlistQueue.new(event.event_id), condition=WaitlistQueue.pk.does_not_exist())
        transaction.save(GATE, new_gate(event_id=event.event_id, shards=int(event.seat_shards)),
                         condition=SeatGate.pk.does_not_exist())
        # Its finding aids, so no search meets the event before it exists (the lab's scratch events have none; a
        # draft gets them when it is published).
        if event.gsi1pk == Event.COLLECTION:
            index.add_facets(transaction, event)
        if add_record is not None:
            add_record(transaction)
        if add_audit is not None:
            add_audit(transaction)
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
    team: str | None = None,
    draft: bool = False,
    **details: Any,
) -> Event:
    """Create an event. Raises RegistrationError('conflict') if ``event_id`` is taken (the put is conditional).

    ``collection`` is the listing it appears in; the lab's scratch events use their own, off the event list,
    and an ``expires_at`` after which DynamoDB's TTL deletes the event item. For a person's request use
    ``event_create_once``, which also takes the tap's idempotency key. ``details``: any of ``DETAILS``. ``draft``:
    born waiting for approval (``event_create_once`` asks the team's settings).
    """
    event = _new_event(event_id=event_id, title=title, description=description, location=location,
                       starts_at=starts_at, capacity=capacity, created_by=created_by, collection=collection,
                       expires_at=expires_at, reminder_hours=reminder_hours, offer_hours=offer_hours, team=team,
                       draft=draft, **details)
    _commit_event_create(event)
    return event


def event_copy_once(*, source_event_id: str, user_id: str, idempotency_key: str, fingerprint: str, title: str,
                    description: str = "", location: str = "", starts_at: datetime, capacity: int,
                    created_by: str, reminder_hours: int | None = None,
                    offer_hours: int | None = None, actor: audit.Actor | None = None, **details: Any) -> StoredOutcome:
    """``event_create_once`` of a new event with the questions ``source_event_id`` asks now (the other fields are
    the form's, prefilled from the source): once per key, so a double tap on "Create copy" makes one event.
    Raises RegistrationError: 'not_found' (no such source event), and as ``event_create_once``."""
    selectors.event_get(event_id=source_event_id)  # 'not_found' for a copy of nothing
    asked = questions_get(event_id=source_event_id).questions
    return event_create_once(user_id=user_id, idempotency_key=idempotency_key, fingerprint=fingerprint, title=title,
                             description=description, location=location, starts_at=starts_at, capacity=capacity,
                             created_by=created_by, reminder_hours=reminder_hours, offer_hours=offer_hours,
                             questions=asked, actor=actor, **details)


def event_api_location(event_id: str) -> str:
    return f"/api/events/{event_id}"


def event_create_once(*, user_id: str, idempotency_key: str, fingerprint: str, title: str,
                      description: str = "", location: str = "", starts_at: datetime, capacity: int,
                      created_by: str, reminder_hours: int | None = None,
                      offer_hours: int | None = None, questions: Iterable[Question] = (), team: str | None = None,
                      team_name: str | None = None, actor: audit.Actor | None = None,
                      **details: Any) -> StoredOutcome:
    """Create an event once per (staff member, idempotency key): the same key answers the first 201 again.

    ``questions`` (the custom questions at registration) are written in the same transaction, as version 1 of
    the event's questions: an event is never seen without the questions it was created with.

    ``user_id`` (``tems.identity.user_key``) scopes the key; ``created_by`` is the name the event shows;
    ``team`` the organizing team (the caller has checked the person may create for it), ``team_name`` its name.
    A team whose events need approval gets a draft (tems.teams.selectors.needs_approval): unlisted, unfound and
    refusing registrations until an approver publishes it (registrations.approvals).

    The key's record is born COMPLETED inside the creating transaction, holding the response (the event as the
    API shows it, with its ``Location``), so a retry of the tap, even after the answer was lost or the server
    died right after the commit, is answered byte for byte and never creates a second event. Raises
    RegistrationError: 'invalid' (a question, named by ``errors``), 'unprocessable' (the key was used for a
    different request), 'busy'. ``actor`` (the person, ``tems.audit.actor_of``): the audit entry, in the same
    transaction.
    """
    checked = checked_questions(list(questions))
    if team_name:  # one organizer: a team's event is found, shown and served under its team's name
        details["organizer"] = team_name
    event = _new_event(event_id=new_event_id(tap=f"{user_id}\n{idempotency_key}"), title=title,
                       description=description, location=location,
                       starts_at=starts_at, capacity=capacity, created_by=created_by, collection=Event.COLLECTION,
                       reminder_hours=reminder_hours, offer_hours=offer_hours, team=team,
                       draft=team is not None and needs_approval(team_id=team), **details)
    # The event as it will be once created, for the stored response. (Its version stays unset until the commit:
    # PynamoDB turns an unset version into the condition attribute_not_exists(version).)
    event.version = 1
    body = event_to_dict(event, seats=SeatCounts(registered=0, waiting=0, capacity=int(capacity)),
                         team_name=team_name)
    del event.attribute_values["version"]
    response = StoredResponse(201, StoredResponse.json(body, status=201).body,
                              headers=(("Location", event_api_location(event.event_id)),))
    add_record = partial(add_completed_record, user_id=user_id, key=idempotency_key, fingerprint=fingerprint,
                         response=response, now=event.created_at)
    add_audit = partial(audit.add_entry, actor=actor, action=EVENT_CREATED, team=team, event_id=event.event_id,
                        after={"title": title, "starts_at": starts_at, "capacity": int(capacity)},
                        idempotency_key=idempotency_key, now=event.created_at)
    try:
        _commit_event_create(event, add_record=add_record, questions=checked, add_audit=add_audit)
    except TransactionCancelled as cancelled:
        if not cancelled.failed(IDEMPOTENCY):
            raise
        return StoredOutcome(stored_answer(cancelled.reasons[IDEMPOTENCY].raw_item, fingerprint), replayed=True)
    if checked:
        known.remember(event.event_id, QuestionSet(1, checked))
    return StoredOutcome(response)
