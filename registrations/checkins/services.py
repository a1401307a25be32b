"""Writes of the door: a check-in is applied once per ticket and once per scan, decided by DynamoDB conditions.

A first check-in is ONE TransactWriteItems (labelled, reasons read by label):

  idempotency   put the scan's record, already COMPLETED with the 201 it answers   absent or expired
  checkin       put ``CHECKIN#<registration>``                                      attribute_not_exists
  registration  ConditionCheck on the event-side registration item                status = confirmed
  counter       ``checked_in_count + 1`` on the event                               the event exists and is
                                                                                    not cancelled
  outbox        put ``CheckInRecorded``
  log           put the history entry

Whoever loses learns why from the cancellation reasons, in this precedence:
  idempotency   the same scan was answered before: replay its stored bytes (ALL_OLD, no read)
  checkin       another scan admitted the ticket: answer 200 "already checked in" with the FIRST check-in's
                details from the ALL_OLD image (no read), and store that answer under this scan's key
  counter       no image: no such event; an image with ``cancelled_at``: the event was called off (409
                event_cancelled)
  registration  not admissible: one read of the registration explains why (waitlisted, cancelled); it decides
                nothing, the condition already did
  conflict      another transaction held an item: jittered pause, bounded, then "busy"
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from registrations.checkins import selectors
from registrations.checkins.models import CheckIn, CheckInLogEntry, EventCheckins
from registrations.errors import RegistrationError, cancelled_in_image, event_cancelled_error
from registrations.models import CONFIRMED, Registration
from registrations.serializers import checkin_to_dict
from registrations.services import RegistrationOutcome
from registrations.ticket_tokens import Ticket, short_code_from_text, ticket_read
from registrations.write_rules import (
    MAX_CONFLICTS,
    busy_error,
    conflict_backoff,
    remember_answer,
    stored_answer,
)
from tems import audit, telemetry
from tems.audit.wording import CHECKED_IN as AUDIT_CHECKED_IN
from tems.audit.wording import CHECKIN_UNDONE
from tems.clock import utcnow
from tems.idempotency import RECORD_LABEL, StoredResponse, add_completed_record
from tems.outbox import outbox_message
from tems.transactions import LabelledTransaction, RetryPolicy, TransactionCancelled

IDEMPOTENCY = RECORD_LABEL
CHECKIN = "checkin"
REGISTRATION = "registration"
COUNTER = "counter"
OUTBOX = "outbox"
LOG = "log"

CHECKED_IN = "checked_in"
ALREADY_CHECKED_IN = "already_checked_in"
NOT_CHECKED_IN = "not_checked_in"

# A door label is free text typed once on the door page; long enough for "North entrance, left lane".
MAX_DOOR_LENGTH = 60
# Doors of one event all move the same counter, so conflicts are expected under a rush; past MAX_CONFLICTS in
# one scan the door is told to try again (its queue keeps the scan and its key).
# A registration promoted from the waiting list between our failed condition and the explaining read: the
# condition is tried again, a bounded number of times.
MAX_ROUNDS = 4


# An undo moves the same counter as the scans at the door: as many tries as a scan gets conflicts.
UNDO_POLICY = RetryPolicy(attempts=MAX_CONFLICTS)


class CheckInOutcome(RegistrationOutcome):
    """What ``checkin_create`` answered; ``kind`` is "checked_in" | "already_checked_in" | "replayed"."""


@dataclass(frozen=True)
class _Scan:
    """Everything about the scan being applied, fixed before the first request is sent."""

    ticket: Ticket
    door: str
    staff_id: str  # the immutable key that scopes the scan's idempotency key
    staff_name: str  # what the doorkeepers see as "checked in by"
    at: datetime
    idempotency_key: str
    fingerprint: str


def clean_door(door: Any) -> str:
    """The door label as stored; RegistrationError('invalid') if it is not a short text."""
    if door is None:
        return ""
    if not isinstance(door, str):
        raise RegistrationError("invalid", "The door must be a text, such as \"B\" or \"North entrance\".",
                                errors={"door": ["Must be a string."]})
    door = " ".join(door.split())
    try:
        door.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON "\\ud800") is not text: refuse it, never store it
        raise RegistrationError("invalid", "The door label is not valid text.",
                                errors={"door": ["Not valid Unicode."]}) from None
    if len(door) > MAX_DOOR_LENGTH:
        raise RegistrationError("invalid", f"The door label is longer than {MAX_DOOR_LENGTH} characters.",
                                errors={"door": [f"At most {MAX_DOOR_LENGTH} characters."]})
    return door


def checkin_create(*, event_id: str, ticket_text: str, door: str, staff_id: str, idempotency_key: str,
                   fingerprint: str, staff_name: str | None = None, now: datetime | None = None,
                   actor: audit.Actor | None = None, sleep: Callable[[float], None] = time.sleep) -> CheckInOutcome:
    """Admit the ticket's holder to ``event_id`` exactly once per ticket and once per scan (idempotency key).

    One request for a first check-in. Returns the 201 of the check-in, the 200 "already checked in" naming
    the first check-in (another scan admitted the ticket), or the replay of this key's first answer.
    ``ticket_text`` is a ticket (its URL or token) or a short code (``ticket_tokens.short_code``).
    Raises RegistrationError: 'invalid' (unreadable or forged ticket, unknown short code, bad door), 'conflict' with
    ``reason``
    'other_event' | 'waitlisted' | 'cancelled' (not admissible) | 'event_cancelled', 'not_found' (no such event),
    'unprocessable' (the key was used for another request), 'busy' (contention did not clear; nothing written).
    ``actor`` (``tems.audit.actor_of``): the audit entry of a first check-in, in its transaction.
    """
    # A typed short code names a registration of this event by its id's start; anything else is a signed ticket
    # (scanned, pasted, or sent by a tap on a name in the door's list). Either way the transaction decides.
    code = short_code_from_text(ticket_text)
    ticket = selectors.ticket_for_code(event_id=event_id, code=code) if code else ticket_read(text=ticket_text)
    if ticket.event_id != event_id:
        raise RegistrationError("conflict", "Not admissible: this ticket is for another event.",
                                reason="other_event", ticket_event_id=ticket.event_id)
    scan = _Scan(ticket=ticket, door=clean_door(door), staff_id=staff_id, staff_name=staff_name or staff_id,
                 at=now or utcnow(),
                 idempotency_key=idempotency_key, fingerprint=fingerprint)
    conflicts = conflict_backoff(
        sleep, detail="Many tickets are being scanned for this event right now; the scan will be sent again.")
    for _ in range(MAX_ROUNDS + MAX_CONFLICTS + 1):
        transaction, response = _checkin_transaction(scan)
        if actor is not None:
            audit.add_entry(transaction, actor=actor, action=AUDIT_CHECKED_IN, team=actor.team_of("event_id", event_id),
                            event_id=event_id, subject=ticket.user_id,
                            after={"registration_id": ticket.registration_id, "door": scan.door},
                            idempotency_key=idempotency_key, now=scan.at)
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            if cancelled.failed(IDEMPOTENCY):
                return _replay(cancelled.reasons[IDEMPOTENCY].raw_item, scan)
            if cancelled.failed(CHECKIN):
                first = CheckIn.from_raw_data(cancelled.reasons[CHECKIN].raw_item)
                return _already_checked_in(first, scan, sleep=sleep)
            if cancelled.failed(COUNTER) and (when := cancelled_in_image(cancelled.reasons[COUNTER].raw_item)):
                raise event_cancelled_error(when) from None
            if cancelled.failed(COUNTER):
                raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
            if cancelled.failed(REGISTRATION):
                _explain_not_admissible(scan.ticket)
                continue  # promoted between the condition and the read: the condition decides again
            if cancelled.is_conflict:
                conflicts.pause()
                continue
            raise
        telemetry.count(telemetry.CHECK_IN)
        return CheckInOutcome(response, CHECKED_IN)
    raise busy_error("This ticket is changing right now; the scan will be sent again.")


def _checkin_transaction(scan: _Scan) -> tuple[LabelledTransaction, StoredResponse]:
    ticket = scan.ticket
    body = checkin_to_dict(registration_id=ticket.registration_id, user_id=ticket.user_id,
                           status=CHECKED_IN, checked_in_at=scan.at, checked_in_by=scan.staff_name, door=scan.door)
    response = StoredResponse.json(body, status=201)
    transaction = LabelledTransaction()
    add_completed_record(transaction, user_id=scan.staff_id, key=scan.idempotency_key, fingerprint=scan.fingerprint,
                         response=response, now=scan.at)
    transaction.save(
        CHECKIN,
        CheckIn(*CheckIn.key_for(ticket.event_id, ticket.registration_id), registration_id=ticket.registration_id,
                event_id=ticket.event_id, user_id=ticket.user_id, checked_in_at=scan.at,
                checked_in_by=scan.staff_name, door=scan.door, scan_key=scan.idempotency_key),
        condition=CheckIn.pk.does_not_exist(), return_old_on_failure=True,
    )
    # Admissible is decided here, in the same transaction, not by a read before it: a cancellation or a
    # demotion that commits first makes this condition fail.
    transaction.condition_check(
        REGISTRATION, Registration, *Registration.event_key_for(ticket.event_id, ticket.registration_id),
        condition=(Registration.status == CONFIRMED) & (Registration.user_id == ticket.user_id),
    )
    transaction.update(
        COUNTER, EventCheckins(*EventCheckins.key_for(ticket.event_id)),
        actions=[EventCheckins.checked_in_count.add(1)],
        condition=EventCheckins.pk.exists() & EventCheckins.cancelled_at.does_not_exist(),
        return_old_on_failure=True,
    )
    transaction.save(OUTBOX, outbox_message(message_type="CheckInRecorded", now=scan.at, payload={
        **body, "event_id": ticket.event_id,
    }))
    transaction.save(LOG, _log_entry(ticket.event_id, ticket.registration_id, CHECKED_IN, at=scan.at,
                                     by=scan.staff_name, door=scan.door))
    return transaction, response


def _log_entry(event_id: str, registration_id: str, action: str, *, at: datetime, by: str,
               door: str) -> CheckInLogEntry:
    return CheckInLogEntry(*CheckInLogEntry.key_for(event_id, at, uuid.uuid4().hex), event_id=event_id,
                           registration_id=registration_id, action=action, at=at, by=by, door=door)


def _explain_not_admissible(ticket: Ticket) -> None:
    """Raise why the registration condition failed; return if it holds again (promoted meanwhile)."""
    registration = selectors.registration_at_door(event_id=ticket.event_id, registration_id=ticket.registration_id,
                                                  user_id=ticket.user_id)
    if registration is None:
        # The ticket is genuine, so the registration existed: cancelling deletes it.
        raise RegistrationError("conflict", "Not admissible: this registration was cancelled.", reason="cancelled")
    if registration.user_id != ticket.user_id:
        raise RegistrationError("invalid", "This ticket does not match its registration: ask for the ticket on the "
                                "student's phone now, or search the name.", reason="forged")
    if registration.status != CONFIRMED:
        raise RegistrationError("conflict", f"Not admissible: this registration is {registration.status}, "
                                "not confirmed (on the waiting list, no seat).", reason=registration.status)


def _replay(raw_item: dict[str, Any], scan: _Scan) -> CheckInOutcome:
    return CheckInOutcome(stored_answer(raw_item, scan.fingerprint,
                                      busy_detail="This scan is still being processed; it will be sent again."),
                          "replayed")


def _already_checked_in(first: CheckIn, scan: _Scan, *, sleep: Callable[[float], None]) -> CheckInOutcome:
    """Another scan admitted the ticket first: answer 200 with its details, and remember that under this key."""
    response = StoredResponse.json(checkin_to_dict(
        registration_id=first.registration_id, user_id=first.user_id, status=ALREADY_CHECKED_IN,
        checked_in_at=first.checked_in_at, checked_in_by=first.checked_in_by, door=first.door,
    ), status=200)
    first = remember_answer(user_id=scan.staff_id, key=scan.idempotency_key, fingerprint=scan.fingerprint,
                            response=response, now=scan.at, sleep=sleep,
                            busy_detail="This scan is being answered by another attempt right now; it will be sent "
                                        "again.")
    if first is not None:
        return _replay(first, scan)  # a duplicate of this scan stored its answer first
    return CheckInOutcome(response, ALREADY_CHECKED_IN)


def checkin_undo(*, event_id: str, registration_id: str, undone_by: str, now: datetime | None = None,
                 actor: audit.Actor | None = None, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Take back a check-in (a doorkeeper's mistake) in one transaction: the check-in goes, the counter drops,
    the history and the outbox record who undid it. Idempotent: undoing what is not checked in changes nothing.

    Returns ``{registration_id, status}``: 'not_checked_in' either way. Raises RegistrationError('busy').
    """
    now = now or utcnow()

    def attempt() -> None:
        transaction = LabelledTransaction()
        transaction.delete(CHECKIN, CheckIn(*CheckIn.key_for(event_id, registration_id)),
                           condition=CheckIn.pk.exists())
        transaction.update(COUNTER, EventCheckins(*EventCheckins.key_for(event_id)),
                           actions=[EventCheckins.checked_in_count.add(-1)],
                           condition=EventCheckins.checked_in_count > 0)
        transaction.save(OUTBOX, outbox_message(message_type="CheckInUndone", now=now, payload={
            "registration_id": registration_id, "event_id": event_id, "undone_by": undone_by,
            "undone_at": now.isoformat(),
        }))
        transaction.save(LOG, _log_entry(event_id, registration_id, "undone", at=now, by=undone_by, door=""))
        if actor is not None:
            audit.add_entry(transaction, actor=actor, action=CHECKIN_UNDONE, team=actor.team_of("event_id", event_id),
                            event_id=event_id, before={"registration_id": registration_id}, now=now)
        transaction.commit()

    try:
        UNDO_POLICY.sleeping(sleep).run(attempt, busy=lambda _: busy_error(
            "The door is busy; try the undo again in a moment."))
    except TransactionCancelled as cancelled:
        if not cancelled.failed(CHECKIN):
            raise
        # Not checked in (never, or already undone): the wanted state holds, nothing was written.
    return {"registration_id": registration_id, "status": NOT_CHECKED_IN}
