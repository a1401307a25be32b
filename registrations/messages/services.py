"""Mail to an event's attendees: staff messages and reminders, each recipient mailed once.

A message is one ``EventMessage`` item. Staff send one with a tap (``message_send_once``): the message, the tap's
idempotency record and one ``StaffMessageRequested`` outbox message in one transaction, the message's key derived
from the event, the author and the tap's key, so a double-click writes one message. The relay's sweep
(``reminders_sweep``) writes an event's reminder the same way, its key derived from the event alone, so a
reminder is written once per event however many sweeps run.

Nobody's request reads the recipients: the relay fans a message out (``message_fan_out``) a page at a time.
A page is one Query of one partition of the audience (an attendee index partition, or the event's check-ins)
and one transaction that writes an outbox mail per recipient (its id derived from the message and the
registration, under ``attribute_not_exists``) and moves the message's cursor under ``pages = <as read>``. A
relay that dies anywhere leaves either the whole page queued and the cursor past it, or neither: the next try
goes on from the cursor, and each recipient's mail is queued exactly once. A pass queues at most
``PAGES_PER_PASS`` pages; the last page of a pass that did not finish also writes the next pass's outbox message,
so a 10,000-recipient message never holds one outbox lease longer than a few seconds.

Each recipient's mail carries a Message-ID derived from its outbox id (tems.outbox.message_id_header): SMTP
delivery is at least once (a relay that dies between the server's 250 and the outbox delete sends again after
the lease), and that repeat carries the same Message-ID, which a receiving system uses to drop it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from pynamodb.exceptions import UpdateError

from registrations import selectors
from registrations.checkins.models import CheckIn
from registrations.errors import RegistrationError
from registrations.events.models import MAX_REMINDER_HOURS, Event
from registrations.messages.models import EventMessage, MessageCopy
from registrations.models import CONFIRMED, OFFERED, REGISTRATION_BUCKETS, WAITLISTED, Registration
from registrations.seating.shards import SeatCounts
from registrations.serializers import message_api_location, message_to_dict
from registrations.write_rules import IDEMPOTENCY, OUTBOX, WRITE_POLICY, StoredOutcome, busy_error, stored_answer
from tems import audit
from tems.audit.wording import MESSAGE_SENT
from tems.clock import utcnow
from tems.dynamo import batch_get_models
from tems.idempotency import StoredResponse, add_completed_record
from tems.outbox import OutboxMessage, outbox_message
from tems.transactions import LabelledTransaction, TransactionCancelled, is_conditional_check_failed

logger = logging.getLogger(__name__)

# Outbox message types (settings.OUTBOX_HANDLERS).
STAFF_MESSAGE_REQUESTED = "StaffMessageRequested"
REMINDER_REQUESTED = "ReminderRequested"
FAN_OUT_CONTINUED = "EventMessageFanOut"
MESSAGE_MAIL = "EventMessageMail"

CHECKED_IN = "checked_in"
NOT_CHECKED_IN = "not_checked_in"
AUDIENCES = (CONFIRMED, WAITLISTED, CHECKED_IN, NOT_CHECKED_IN)
AUDIENCE_LABELS = {CONFIRMED: "Confirmed", WAITLISTED: "On the waiting list", CHECKED_IN: "Checked in",
                   NOT_CHECKED_IN: "Confirmed, not checked in"}
# Everyone holding a seat or a place in line: the audience of an event's cancellation notice (not one staff choose
# for a message, so not in AUDIENCES).
REGISTRANTS = "registrants"
MAX_SUBJECT_CHARS = 200
MAX_BODY_CHARS = 5000

# Recipients per page: a page is one transaction of two items per recipient (the mail and the person's copy) plus
# the message and maybe the next pass's outbox message, under DynamoDB's 100 items; 40 keeps each transaction
# small (a failed one is cheap to redo).
PAGE_SIZE = 40
# Pages per relay pass: a pass must end well inside the outbox lease (tems.outbox.LEASE), or another relay would
# take the message over mid-pass (harmless, the cursor's condition decides, but wasted work); measured in
# docs/journal/2026-12-04-messages.md.
PAGES_PER_PASS = 20
# A reminder is written this long after its time, not at it: a registration made just before the time, whose
# transaction was still being retried or whose index entry not yet visible, is then among the recipients.
REMINDER_GRACE = timedelta(minutes=1)

MESSAGE = "message"
CONTINUATION = "continuation"


@dataclass(frozen=True)
class Recipient:
    registration_id: str
    user_id: str


def _checked(*, audience: str, subject: str, body: str) -> tuple[str, str]:
    errors: dict[str, list[str]] = {}
    if audience not in AUDIENCES:
        errors["audience"] = [f"Choose one of: {', '.join(AUDIENCES)}."]
    subject, body = (subject or "").strip(), (body or "").strip()
    if not subject or len(subject) > MAX_SUBJECT_CHARS:
        errors["subject"] = [f"A subject of 1 to {MAX_SUBJECT_CHARS} characters is required."]
    if not body or len(body) > MAX_BODY_CHARS:
        errors["body"] = [f"A message of 1 to {MAX_BODY_CHARS} characters is required."]
    if errors:
        raise RegistrationError("invalid", "Invalid fields: " + "; ".join(
            f"{name}: {' '.join(problems)}" for name, problems in errors.items()), errors=errors)
    return subject, body


def _staff_message_id(event_id: str, user_id: str, idempotency_key: str) -> str:
    return EventMessage.staff_id_for(event_id, user_id, idempotency_key)


def message_send_once(*, event_id: str, user_id: str, created_by: str, idempotency_key: str, fingerprint: str,
                      audience: str, subject: str, body: str, actor: audit.Actor | None = None) -> StoredOutcome:
    """Write a staff message to the event's ``audience`` once per (staff member, idempotency key); 202.

    One transaction: the message (its key from the event, the author and the key, ``attribute_not_exists``), the
    tap's COMPLETED record holding the answer, and the ``StaffMessageRequested`` outbox message whose handler
    fans it out. A retried or doubled tap gets the first answer back and writes nothing. Raises
    RegistrationError: 'not_found' (no such event), 'invalid' (audience, subject, body), 'unprocessable' (the
    key was used for another request), 'busy'. ``actor`` (``tems.audit.actor_of``): the audit entry (the audience
    and the message, not its words: they may name people), in the same transaction.
    """
    subject, body = _checked(audience=audience, subject=subject, body=body)
    event = selectors.event_get(event_id=event_id, consistent=False)  # 404 before anything is written
    now = utcnow()
    message_id = _staff_message_id(event_id, user_id, idempotency_key)
    message = EventMessage(*EventMessage.key_for(event_id, message_id), event_id=event_id, message_id=message_id,
                           kind=EventMessage.STAFF, audience=audience, subject=subject, body=body, created_at=now,
                           created_by=created_by, registered_before=now, partition=0, pages=0, queued=0,
                           **EventMessage.index_fields(event_id, message_id, now))
    location = message_api_location(event_id, message_id)
    response = StoredResponse(202, StoredResponse.json(message_to_dict(message), status=202).body,
                              headers=(("Location", location),))

    def attempt() -> None:
        transaction = LabelledTransaction()
        transaction.save(MESSAGE, message, condition=EventMessage.pk.does_not_exist())
        add_completed_record(transaction, user_id=user_id, key=idempotency_key, fingerprint=fingerprint,
                             response=response, now=now)
        transaction.save(OUTBOX, outbox_message(message_type=STAFF_MESSAGE_REQUESTED, now=now,
                                                payload={"event_id": event_id, "message_id": message_id}))
        audit.add_entry(transaction, actor=actor, action=MESSAGE_SENT, team=event.team, event_id=event_id,
                        after={"audience": audience, "message_id": message_id}, idempotency_key=idempotency_key,
                        now=now)
        transaction.commit()

    try:
        WRITE_POLICY.run(attempt, busy=lambda _: busy_error("Messages are being sent right now; try again."))
    except TransactionCancelled as cancelled:
        if cancelled.failed(IDEMPOTENCY):
            return StoredOutcome(stored_answer(cancelled.reasons[IDEMPOTENCY].raw_item, fingerprint), replayed=True)
        if cancelled.failed(MESSAGE):
            # The key's record expired but its message stands: the tap was applied; say so, send nothing again.
            return StoredOutcome(response, replayed=True)
        raise
    return StoredOutcome(response)


# --- the preview: counters, never the recipients ------------------------------------------------------------

def audience_count(*, seats: SeatCounts, audience: str, checked_in: int) -> int:
    """How many an audience holds now, from the event's ``seats`` (``seat_counts``) and the door's ``checked_in``
    count: no read of the recipients. A preview: the fan-out sends to those registered by then."""
    confirmed = seats.registered
    if audience == CONFIRMED:
        return confirmed
    if audience == WAITLISTED:
        return seats.waiting
    if audience == CHECKED_IN:
        return checked_in
    if audience == NOT_CHECKED_IN:
        return max(confirmed - checked_in, 0)
    raise RegistrationError("invalid", f"Choose one of: {', '.join(AUDIENCES)}.",
                            errors={"audience": ["Unknown audience."]})


# --- reminders ----------------------------------------------------------------------------------------------

def reminder_time(event: Event) -> datetime | None:
    """When the event's registrants are reminded, or None: reminders off, or the event called off."""
    hours = event.reminder_hours_or_default
    if hours <= 0 or event.is_cancelled:
        return None
    return event.starts_at - timedelta(hours=hours)


def reminders_sweep(*, now: datetime | None = None) -> int:
    """Write the reminder of every event whose reminder time (plus ``REMINDER_GRACE``) has passed and that has
    not started: the periodic job of the relay (settings.RELAY_PERIODIC_JOBS). Returns how many were written.

    One Query of the events starting within ``MAX_REMINDER_HOURS`` and one BatchGetItem of their reminders (only
    to skip the written ones: the write itself is conditional, so two sweeps write one reminder).
    """
    now = now or utcnow()
    upcoming = Event.by_start.query(Event.COLLECTION, Event.gsi1sk.between(
        Event.listing_key(now, ""), Event.listing_key(now + timedelta(hours=MAX_REMINDER_HOURS), "~")))
    due: dict[str, tuple[Event, datetime]] = {}
    for event in upcoming:
        at = reminder_time(event)
        if at is not None and at + REMINDER_GRACE <= now < event.starts_at:
            due[event.event_id] = (event, at)
    if not due:
        return 0
    written = {message.event_id for message in batch_get_models(
        [(EventMessage, EventMessage.key_for(event_id, EventMessage.reminder_id_for(event_id))) for event_id in due],
        consistent_read=False)}
    created = 0
    for event_id, (event, at) in due.items():
        if event_id not in written and _reminder_create(event=event, at=at, now=now):
            created += 1
    return created


def _reminder_create(*, event: Event, at: datetime, now: datetime) -> bool:
    message_id = EventMessage.reminder_id_for(event.event_id)
    transaction = LabelledTransaction()
    transaction.save(MESSAGE, EventMessage(
        *EventMessage.key_for(event.event_id, message_id), event_id=event.event_id, message_id=message_id,
        kind=EventMessage.REMINDER, audience=CONFIRMED, subject="Reminder", body="", created_at=now,
        created_by="", registered_before=at, partition=0, pages=0, queued=0,
        **EventMessage.index_fields(event.event_id, message_id, now),
    ), condition=EventMessage.pk.does_not_exist())
    transaction.save(OUTBOX, outbox_message(message_type=REMINDER_REQUESTED, now=now,
                                            payload={"event_id": event.event_id, "message_id": message_id}))
    try:
        WRITE_POLICY.run(transaction.commit, busy=lambda _: busy_error("Reminders are being written right now."))
    except TransactionCancelled as cancelled:
        if cancelled.failed(MESSAGE):
            return False  # another sweep wrote it
        raise
    return True


# --- the fan-out (relay) ------------------------------------------------------------------------------------

def _partitions(audience: str, event_id: str) -> list[str]:
    """Where an audience's recipients are listed, in the fixed order the cursor walks them."""
    if audience == CHECKED_IN:
        return [Event.pk_for(event_id)]
    # The attendee index (registrations.attendees), every bucket.
    return [Registration.attendees_pk_for(event_id, bucket) for bucket in range(REGISTRATION_BUCKETS)]


def _page(message: EventMessage) -> tuple[list[Recipient], dict | None]:
    """One Query of the cursor's partition: the recipients it found and where it stopped (None: at its end)."""
    partition = _partitions(message.audience, message.event_id)[int(message.partition)]
    start = json.loads(message.last_key) if message.last_key else None
    if message.audience == CHECKED_IN:
        results = CheckIn.query(partition, CheckIn.sk.startswith(CheckIn.SK_PREFIX),
                                filter_condition=CheckIn.checked_in_at < message.registered_before,
                                limit=PAGE_SIZE, last_evaluated_key=start, consistent_read=True)
        raw = next(results.page_iter)
        found = [CheckIn.from_raw_data(item) for item in raw.get("Items", [])]
        return [Recipient(c.registration_id, c.user_id) for c in found], raw.get("LastEvaluatedKey")
    if message.audience == REGISTRANTS:
        wanted = Registration.status.is_in(CONFIRMED, OFFERED, WAITLISTED)
    else:
        wanted = Registration.status == (WAITLISTED if message.audience == WAITLISTED else CONFIRMED)
    if message.kind != EventMessage.CANCELLATION:
        # A cancellation goes to everyone registered when it committed: nobody can register after it, and a
        # registration whose clock ran ahead of the cancellation's is still one of them.
        wanted &= Registration.created_at < message.registered_before
    results = Registration.attendees.query(partition, filter_condition=wanted, limit=PAGE_SIZE,
                                           last_evaluated_key=start)
    raw = next(results.page_iter)
    found = [Registration.from_raw_data(item) for item in raw.get("Items", [])]
    recipients = [Recipient(r.registration_id, r.user_id) for r in found]
    if message.audience == NOT_CHECKED_IN and recipients:
        checked = {c.registration_id for c in batch_get_models(
            [(CheckIn, CheckIn.key_for(message.event_id, r.registration_id)) for r in recipients])}
        recipients = [r for r in recipients if r.registration_id not in checked]
    return recipients, raw.get("LastEvaluatedKey")


def _mail(message: EventMessage, recipient: Recipient, now: datetime) -> OutboxMessage:
    payload = {"event_id": message.event_id, "message_id": message.message_id, "kind": message.kind,
               "user": recipient.user_id, "registration_id": recipient.registration_id}
    if message.kind == EventMessage.CANCELLATION and message.body:
        payload["reason"] = message.body  # the reason staff gave travels with each notice
    return outbox_message(
        message_type=MESSAGE_MAIL, now=now,
        message_id=EventMessage.delivery_id_for(message.message_id, recipient.registration_id), payload=payload)


def _copy(message: EventMessage, recipient: Recipient) -> MessageCopy:
    return MessageCopy(*MessageCopy.key_for(recipient.user_id, message.event_id, message.message_id,
                                            message.created_at),
                       user_id=recipient.user_id, event_id=message.event_id, message_id=message.message_id,
                       registration_id=recipient.registration_id, created_at=message.created_at)


def _queue_page(message: EventMessage, *, continue_after: bool, now: datetime) -> EventMessage | None:
    """Queue the mails of the cursor's page and move the cursor past it, in one transaction. Returns the message
    as moved, or None when another relay moved it first (the page is theirs)."""
    recipients, stopped_at = _page(message)
    partitions = len(_partitions(message.audience, message.event_id))
    partition, last_key = int(message.partition), stopped_at
    if stopped_at is None:
        partition += 1
    done = partition >= partitions
    # A registration listed twice (an index entry moved between partitions while this read them) is one mail.
    recipients = list({r.registration_id: r for r in recipients}.values())
    while True:
        transaction = LabelledTransaction()
        mails = {f"mail_{n}": recipient for n, recipient in enumerate(recipients)}
        copied: set[str] = set()
        for label, recipient in mails.items():
            transaction.save(label, _mail(message, recipient, now), condition=OutboxMessage.pk.does_not_exist())
            if recipient.user_id not in copied:  # one copy per person, the key a transaction may touch once
                copied.add(recipient.user_id)
                # Unconditional: the same copy whichever listing of the registration writes it.
                transaction.save(f"copy_{label}", _copy(message, recipient))
        actions = [EventMessage.partition.set(partition), EventMessage.pages.add(1),
                   EventMessage.queued.add(len(recipients))]
        actions.append(EventMessage.last_key.set(json.dumps(last_key)) if last_key else EventMessage.last_key.remove())
        if done:
            actions.append(EventMessage.done_at.set(now))
        transaction.update(MESSAGE, EventMessage(*EventMessage.key_for(message.event_id, message.message_id)),
                           actions=actions, condition=_cursor_as_read(message))
        if continue_after and not done:
            transaction.save(CONTINUATION, outbox_message(
                message_type=FAN_OUT_CONTINUED, now=now,
                message_id=EventMessage.delivery_id_for(message.message_id, f"pass-{int(message.pages) + 1}"),
                payload={"event_id": message.event_id, "message_id": message.message_id}),
                condition=OutboxMessage.pk.does_not_exist())
        try:
            WRITE_POLICY.run(transaction.commit, busy=lambda _: busy_error("The outbox is busy."))
        except TransactionCancelled as cancelled:
            if cancelled.failed(MESSAGE):
                return None
            queued = {label for label in mails if cancelled.failed(label)}
            if not queued:
                raise
            # Still waiting in the outbox from an earlier listing of the same registration: not queued twice.
            recipients = [recipient for label, recipient in mails.items() if label not in queued]
            continue
        break
    message.partition, message.last_key = partition, json.dumps(last_key) if last_key else None
    message.pages, message.queued = int(message.pages) + 1, int(message.queued or 0) + len(recipients)
    message.done_at = now if done else None
    return message


def _cursor_as_read(message: EventMessage):
    """The condition of a page's transaction: nobody moved the cursor since this relay read it."""
    return EventMessage.pages == int(message.pages)


def message_fan_out(outbox: OutboxMessage) -> None:
    """Outbox handler of a message's fan-out (staff message, reminder, cancellation notice, or the next pass of
    any): queue up to ``PAGES_PER_PASS`` pages of mails from the message's cursor on. Idempotent: a finished
    message, or a page another relay queued first, queues nothing."""
    data = outbox.data
    try:
        message = EventMessage.get(*EventMessage.key_for(data["event_id"], data["message_id"]), consistent_read=True)
    except EventMessage.DoesNotExist:
        return
    if message.kind == EventMessage.REMINDER and _called_off(message.event_id):
        # No reminder for a cancelled event: end the fan-out where it is (the mails' handler checks again).
        message.partition = len(_partitions(message.audience, message.event_id))
    for page in range(PAGES_PER_PASS):
        if message.done_at is not None:
            return
        if int(message.partition) >= len(_partitions(message.audience, message.event_id)):
            _finish(message)
            return
        moved = _queue_page(message, continue_after=page == PAGES_PER_PASS - 1, now=utcnow())
        if moved is None:
            return  # another relay holds this fan-out and goes on from its cursor
        message = moved


def _finish(message: EventMessage) -> None:
    try:
        message.update(actions=[EventMessage.done_at.set(utcnow()),
                                EventMessage.partition.set(int(message.partition)), EventMessage.pages.add(1)],
                       condition=_cursor_as_read(message))
    except UpdateError as error:
        if not is_conditional_check_failed(error):
            raise  # a refused condition means another relay finished it


def _called_off(event_id: str) -> bool:
    try:
        event = Event.get(*Event.key_for(event_id), consistent_read=True)
    except Event.DoesNotExist:
        return True
    return event.is_cancelled
