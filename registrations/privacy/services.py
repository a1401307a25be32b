"""Writes of a person's data: their erasure, and the erasure of answers after an event's retention.

An erasure cancels every live registration through the ordinary cancel (``registration_cancel_once``), so a freed
seat goes to the next in line exactly as when the person taps "cancel", and exactly once: each cancel's
idempotency key is derived from (person, registration), so a re-run after a crash replays the first run's cancel
instead of making another. Then what is kept as history (registrations of past events) is pseudonymised, the
stored answers and outbox messages naming the person are deleted or redacted, and last the account goes.
Every step can run again: an erasure left halfway is finished by the relay's periodic job (``erasures_resume``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from pynamodb.exceptions import UpdateError
from pynamodb.expressions.operand import Path

from registrations import selectors as registration_selectors
from registrations.checkins.models import CheckIn
from registrations.errors import RegistrationError
from registrations.events.models import Event
from registrations.messages.models import MessageCopy
from registrations.models import (
    CONFIRMED,
    OFFERED,
    REGISTRATION_BUCKETS,
    WAITLISTED,
    Registration,
    RegistrationClaim,
    WaitlistEntry,
)
from registrations.privacy import selectors
from registrations.privacy.models import ANSWERS_ATTRIBUTE, MAX_RETENTION_DAYS, Erasure, EventRetention
from registrations.seating.models import SeatShard
from registrations.seating.shards import ticket_lanes
from registrations.services.cancel import registration_cancel_once
from registrations.write_rules import WRITE_POLICY, busy_error
from tems import accounts
from tems.audit import Actor, add_entry
from tems.audit.services import audit_pseudonymise
from tems.audit.wording import ANSWERS_RETENTION_CHANGED
from tems.clock import utcnow
from tems.idempotency import IdempotencyRecord
from tems.identity import user_key
from tems.outbox import OutboxMessage
from tems.ratelimit import WriteRateCounter
from tems.transactions import LabelledTransaction, TransactionCancelled, is_conditional_check_failed

logger = logging.getLogger(__name__)

# The cancels of an erasure are keyed in a namespace of their own: no tap's random key can equal one.
ERASE_NAMESPACE = uuid.UUID("5b0c3f4e-8f0e-4d53-9a57-3c1e3d0b7a61")
# A registration that commits while its owner's erasure starts (a tap already on its way) is found by listing
# again; a third listing that still finds one means taps keep arriving, so the erasure stops, to be resumed.
LIVE_LISTINGS = 3
# An erasure still pending this long after its request was interrupted (the request itself finishes it within
# seconds): the periodic job takes it up. A few at a time, so one pass of the relay stays short.
RESUME_AFTER = timedelta(minutes=2)
RESUME_PER_RUN = 5
# The retention job erases answers a page at a time, at most this many Queries per run over all due events, so
# one pass of the relay stays short; an event with more left stays due and is continued at the next run. An
# event's registrations sit in about twenty partitions (its copies' buckets and the waiting list's lanes), each
# a Query even when empty: 64 finish a small event in one run.
RETENTION_PAGE_ITEMS = 25
RETENTION_PAGES_PER_RUN = 64
RETENTION_EVENTS_PER_RUN = 10

ERASURE = "erasure"
RETENTION = "retention"
HISTORY = "history"


@dataclass
class ErasureReport:
    user_id: str
    cancelled: int = 0
    pseudonymised: int = 0
    audit_entries: int = 0  # the audit log's entries that held the person's key
    deleted: int = 0
    redacted: int = 0


def erase_key(*, user_id: str, registration_id: str) -> str:
    """The idempotency key of the erasure's cancel of one registration: the same on every run."""
    return str(uuid.uuid5(ERASE_NAMESPACE, f"{user_id}:{registration_id}"))


def erase_fingerprint(*, user_id: str, registration_id: str) -> str:
    return hashlib.sha256(f"erase-cancel:{user_id}:{registration_id}".encode()).hexdigest()


def pseudonym_for(user_id: str) -> str:
    """What an erased person's kept history shows instead of their name: derived from the random user key (which
    names nobody once the account is gone), so two erased people stay two in an attendee list."""
    return "erased-" + hashlib.blake2b(user_id.encode(), digest_size=4).hexdigest()


# --- erasure ------------------------------------------------------------------------------------------------

def personal_data_erase(*, user, now: datetime | None = None, allow_staff: bool = False) -> ErasureReport:
    """Erase ``user`` and everything TEMS holds about them; returns what was done.

    Records the erasure (so it is finished even if this process dies), stops the account (no log-in, sessions
    ended, so no new tap arrives), cancels each live registration through the normal cancel, pseudonymises the
    registrations kept as history, deletes the person's stored answers and write counters, redacts their name
    from others' stored answers and from undelivered outbox messages, then deletes the account. Running it again
    finishes what is left and changes nothing already done. Raises RegistrationError: 'forbidden' for a staff
    account (its name is in the audit trail of events and check-ins, which erasure would break: an administrator
    decides, with ``manage.py erase_account --staff``; ``allow_staff``), 'busy' (a cancel met contention for too
    long; the erasure stays recorded and is resumed).
    """
    if (user.is_staff or user.is_superuser) and not allow_staff:
        raise RegistrationError("forbidden", "A staff account is erased by an administrator, not from this page.")
    now = now or utcnow()
    user_id = user_key(user)
    _erasure_begin(user_id=user_id, account_id=user.pk, now=now)
    accounts.account_deactivate(account_id=user.pk)
    return _erase(user_id=user_id, account_id=user.pk, username=user.get_username(), email=user.email, now=now)


def _erasure_begin(*, user_id: str, account_id: int, now: datetime) -> None:
    erasure = Erasure(*Erasure.key_for(user_id), user_id=user_id, account_id=account_id, requested_at=now,
                      gsi1pk=Erasure.COLLECTION, gsi1sk=Erasure.listing_key(now, user_id))
    transaction = LabelledTransaction()
    transaction.save(ERASURE, erasure, condition=Erasure.pk.does_not_exist())
    try:
        WRITE_POLICY.run(transaction.commit, busy=lambda _: busy_error("Please try again in a moment."))
    except TransactionCancelled as cancelled:
        if not cancelled.failed(ERASURE):
            raise
        # Requested before: this run continues it.


def _erase(*, user_id: str, account_id: int | None, username: str | None, email: str | None,
           now: datetime) -> ErasureReport:
    report = ErasureReport(user_id=user_id)
    report.cancelled = _cancel_live(user_id=user_id, now=now)
    pseudonym = pseudonym_for(user_id)
    for registration in selectors.user_registrations(user_id=user_id):
        report.pseudonymised += _pseudonymise(registration, pseudonym=pseudonym)
    # The audit log names nobody (keys only); the key is replaced too, so a restored account database could not
    # tie the entries back to the person.
    report.audit_entries = audit_pseudonymise(user_id=user_id, pseudonym=pseudonym)
    for item in selectors.partition_items(selectors.write_rate_pk(user_id)):
        WriteRateCounter(item["PK"], item["SK"]).delete()
        report.deleted += 1
    # Which messages reached the person: theirs to read, nobody's to keep once they are gone (the messages stay,
    # addressed to an audience, not to them).
    for item in selectors.partition_items(selectors.inbox_pk(user_id)):
        MessageCopy(item["PK"], item["SK"]).delete()
        report.deleted += 1
    if username:
        deleted, redacted = _stored_answers_and_outbox(
            user_id=user_id, fragments=_fragments(username=username, email=email, pseudonym=pseudonym))
        report.deleted += deleted
        report.redacted += redacted
    if account_id is not None:
        accounts.account_erase(account_id=account_id)
    _erasure_finish(user_id=user_id, now=now)
    return report


def _live(registration: dict[str, Any], events: dict[str, Event], now: datetime) -> bool:
    """Whether a registration is still to come (cancelled, it frees a seat); one of a past or called-off event is
    history."""
    event = events.get(registration["event_id"])
    return (registration.get("status") in (CONFIRMED, OFFERED, WAITLISTED) and event is not None
            and event.starts_at > now and not event.is_cancelled)


def _cancel_live(*, user_id: str, now: datetime) -> int:
    cancelled = 0
    for _ in range(LIVE_LISTINGS):
        registrations = selectors.user_registrations(user_id=user_id)
        events = {event.event_id: event for event in Event.batch_get(
            sorted({Event.key_for(r["event_id"]) for r in registrations}))}
        live = [r for r in registrations if _live(r, events, now)]
        if not live:
            return cancelled
        for registration in live:
            registration_id = registration["registration_id"]
            try:
                outcome = registration_cancel_once(
                    user_id=user_id, registration_id=registration_id,
                    idempotency_key=erase_key(user_id=user_id, registration_id=registration_id),
                    fingerprint=erase_fingerprint(user_id=user_id, registration_id=registration_id))
            except RegistrationError as error:
                if error.code != "not_found":
                    raise
                continue  # gone between the listing and the cancel (its owner cancelled it): nothing to free
            cancelled += 0 if outcome.replayed else 1
    raise busy_error("New registrations keep arriving for this account; the erasure will be finished shortly.")


def _pseudonymise(registration: dict[str, Any], *, pseudonym: str) -> int:
    """Replace the name on every item of a kept registration by ``pseudonym`` (the attendee index's key with it)
    and remove its answers: one transaction, each item only if it is still this registration's."""
    registration_id = registration["registration_id"]
    found = [registration, *selectors.items_by_key(
        key for key in selectors.registration_copy_keys(registration)
        if not key[1].startswith(CheckIn.SK_PREFIX))]
    transaction, changed = LabelledTransaction(), 0
    for item in found:
        actions = []
        if item.get("user_name") not in (None, pseudonym):
            actions.append(Registration.user_name.set(pseudonym))
        if str(item.get("GSI1PK", "")).startswith("ATTENDEES#"):
            wanted = Registration.attendee_sk_for(pseudonym, registration_id)
            if item.get("GSI1SK") != wanted:
                actions.append(Registration.gsi1sk.set(wanted))
        if ANSWERS_ATTRIBUTE in item:
            actions.append(Path(ANSWERS_ATTRIBUTE).remove())
        if actions:
            transaction.update(f"{HISTORY}_{changed}", Registration(item["PK"], item["SK"]), actions=actions,
                               condition=Registration.registration_id == registration_id)
            changed += 1
    if not changed:
        return 0
    try:
        WRITE_POLICY.run(transaction.commit, busy=lambda _: busy_error("Please try again in a moment."))
    except TransactionCancelled:
        # An item moved on since the read (a promotion rewrote a copy): the next run reads it again.
        raise busy_error("This account's registrations are changing; the erasure will be finished shortly.") from None
    return 1


# The JSON keys under which stored answers and outbox messages carry a person's display name (the registration's
# ``user_name``, the door's ``user``). A name is matched only as such a key's value: a username is chosen freely,
# and one spelled like a status ("confirmed") must not rewrite every stored answer that says it.
NAME_KEYS = ("user", "user_name")


def _quoted(value: str) -> list[str]:
    # How a string appears inside stored JSON: escaped (outbox payloads) or as UTF-8 (stored answers).
    return sorted({json.dumps(value), json.dumps(value, ensure_ascii=False)})


def _fragments(*, username: str, email: str | None, pseudonym: str) -> dict[str, str]:
    """Each way the person appears in stored JSON, with what replaces it: the name as the value of a name key
    (compact or spaced separators), the address as any string (it is unmistakable)."""
    replaced = {}
    for quoted in _quoted(username):
        for key in NAME_KEYS:
            for separator in (":", ": "):
                replaced[f'"{key}"{separator}{quoted}'] = f'"{key}"{separator}{json.dumps(pseudonym)}'
    for quoted in _quoted(email) if email else []:
        replaced[quoted] = json.dumps(pseudonym)
    return replaced


def _stored_answers_and_outbox(*, user_id: str, fragments: dict[str, str]) -> tuple[int, int]:
    """Delete the person's own stored answers; redact them from others' (a door's scan answer names the ticket's
    holder) and from undelivered outbox messages, which are kept: their handlers must still run.

    These items are keyed by tap and by message, not by person, so no partition or index lists them: one
    filtered Scan of the table finds them (it reads the whole table; erasures are rare, and the records expire
    within a day anyway). Returns (deleted, redacted).
    """
    own_prefix = IdempotencyRecord.pk_for(user_id, "")
    message_prefix = OutboxMessage.key_for("")[0]
    own = IdempotencyRecord.pk.startswith(own_prefix)
    mentions_record = _any(IdempotencyRecord.response_body.contains(fragment) for fragment in fragments)
    mentions_message = _any(OutboxMessage.payload.contains(fragment) for fragment in fragments)
    records = IdempotencyRecord.pk.startswith(IdempotencyRecord.pk_for("", "")[:-1])
    messages = OutboxMessage.pk.startswith(message_prefix)
    condition = (records & (own | mentions_record)) | (messages & mentions_message)
    deleted = redacted = 0
    for page in IdempotencyRecord.scan(filter_condition=condition, consistent_read=True).page_iter:
        for raw in page.get("Items", []):
            item = selectors.item_from_raw(raw)
            if str(item["PK"]).startswith(own_prefix):
                IdempotencyRecord(item["PK"], item["SK"]).delete()
                deleted += 1
            elif str(item["PK"]).startswith(message_prefix):
                redacted += _redact(OutboxMessage, item, "payload", fragments)
            else:
                redacted += _redact(IdempotencyRecord, item, "response_body", fragments)
    return deleted, redacted


def _any(conditions):
    conditions = list(conditions)
    combined = conditions[0]
    for condition in conditions[1:]:
        combined |= condition
    return combined


def _redact(model, item: dict[str, Any], attribute: str, fragments: dict[str, str]) -> int:
    before = item.get(attribute)
    if not isinstance(before, str):
        return 0
    after = before
    for fragment, replacement in fragments.items():
        after = after.replace(fragment, replacement)
    if after == before:
        return 0
    field = getattr(model, attribute)
    try:
        # Only over the value read: a message the relay rewrote meanwhile is read again at the next run.
        model(item["PK"], item["SK"]).update(actions=[field.set(after)], condition=field == before)
    except UpdateError as error:
        if not is_conditional_check_failed(error):
            raise
        return 0
    return 1


def _erasure_finish(*, user_id: str, now: datetime) -> None:
    Erasure(*Erasure.key_for(user_id)).update(
        actions=[Erasure.done_at.set(now), Erasure.gsi1pk.remove(), Erasure.gsi1sk.remove()],
        condition=Erasure.pk.exists())


def erasures_resume(*, now: datetime | None = None) -> int:
    """Finish the erasures left halfway (the relay's periodic job, settings.RELAY_PERIODIC_JOBS); returns how
    many were finished. The account is read again by its database id: gone already, only the DynamoDB steps run
    (each is safe to repeat), with the name left unknown, so what named it is found by the key alone."""
    now = now or utcnow()
    finished = 0
    for erasure in Erasure.pending.query(Erasure.COLLECTION, Erasure.gsi1sk <= Erasure.listing_key(now - RESUME_AFTER,
                                                                                                     "~"),
                                         limit=RESUME_PER_RUN):
        account = get_user_model().objects.filter(pk=erasure.account_id).first() if erasure.account_id else None
        if account is not None:
            accounts.account_deactivate(account_id=account.pk)  # the request may have died before it did
        _erase(user_id=erasure.user_id, account_id=account.pk if account else None,
               username=account.get_username() if account else None, email=account.email if account else None,
               now=now)
        finished += 1
    return finished


# --- retention of answers -------------------------------------------------------------------------------------

def retention_set(*, event_id: str, days: int | None, expected_version: int | None,
                  updated_by: str, actor: Actor | None = None) -> EventRetention | None:
    """Keep the event's answers ``days`` days after its start (None: until someone erases them), if the
    retention is still at ``expected_version`` (None: never set). Returns the retention, or None when removed.

    Raises RegistrationError: 'not_found' (no such event), 'invalid' (days out of 0..MAX_RETENTION_DAYS),
    'conflict' (someone changed it in between: the page shows theirs).
    """
    if days is not None and not 0 <= days <= MAX_RETENTION_DAYS:
        raise RegistrationError("invalid", f"Keep answers from 0 to {MAX_RETENTION_DAYS} days after the event.",
                                errors={"days": [f"From 0 to {MAX_RETENTION_DAYS}."]})
    event = registration_selectors.event_get(event_id=event_id)
    transaction = LabelledTransaction()
    if days is None:
        if expected_version is None:
            return None
        transaction.delete(RETENTION, EventRetention(*EventRetention.key_for(event_id), version=expected_version))
        retention = None
    else:
        due = EventRetention.due_for(event.starts_at, days)
        retention = EventRetention(*EventRetention.key_for(event_id), event_id=event_id, days=days, due_at=due,
                                   updated_by=updated_by, gsi1pk=EventRetention.COLLECTION,
                                   gsi1sk=EventRetention.listing_key(due, event_id))
        if expected_version is not None:
            retention.version = expected_version  # PynamoDB's save checks it and writes the next one
        transaction.save(RETENTION, retention)
    add_entry(transaction, actor=actor, action=ANSWERS_RETENTION_CHANGED, team=event.team, event_id=event_id,
              after={"days": days})
    try:
        WRITE_POLICY.run(transaction.commit, busy=lambda _: busy_error("Please try again in a moment."))
    except TransactionCancelled as cancelled:
        if cancelled.failed(RETENTION):
            raise RegistrationError("conflict", "Someone changed this event's retention meanwhile; nothing was "
                                                "saved. Here is theirs.") from None
        raise
    return retention


def _answer_partitions(event: Event) -> list[tuple[str, str]]:
    """Where the event's registrations have their event-side item: its copies' buckets and the waiting list's
    lanes (an entry carries its registration)."""
    event_id = event.event_id
    return ([(Registration.event_pk_for(event_id, bucket), Registration.SK_PREFIX)
             for bucket in range(REGISTRATION_BUCKETS)]
            + [(SeatShard.pk_for(event_id, lane), WaitlistEntry.SK_PREFIX)
               for lane in range(ticket_lanes(int(event.seat_shards or 0)))])


def _remove_answers(pk: str, sk: str) -> None:
    answers = Path(ANSWERS_ATTRIBUTE)
    try:
        Registration(pk, sk).update(actions=[answers.remove()], condition=answers.exists())
    except UpdateError as error:
        if not is_conditional_check_failed(error):
            raise  # absent item or answers gone already: nothing to remove


def _erase_event_answers(event: Event, retention: EventRetention, *, pages: int) -> tuple[bool, int]:
    """Remove the answers of one event's registrations, at most ``pages`` Queries, from where the last run got
    to; (all gone, Queries used).

    Each page is one Query of items that still have answers: the registration's user-side copy and claim lose
    theirs first, the event-side item last, so a page interrupted halfway is found again by the next run's Query
    of it. After each page the retention item records where to go on.
    """
    used = 0
    partitions = _answer_partitions(event)
    number = int(retention.partition or 0)
    start = json.loads(retention.last_key) if retention.last_key else None
    while number < len(partitions):
        if used == pages:
            return False, used
        pk, prefix = partitions[number]
        found = Registration.query(pk, Registration.sk.startswith(prefix),
                                   filter_condition=Path(ANSWERS_ATTRIBUTE).exists(), last_evaluated_key=start,
                                   limit=RETENTION_PAGE_ITEMS, consistent_read=True)
        page = next(found.page_iter)
        used += 1
        for raw in page.get("Items", []):
            item = selectors.item_from_raw(raw)
            if item.get("user_id") and item.get("registration_id"):
                _remove_answers(*Registration.user_key_for(item["user_id"], item["registration_id"]))
                _remove_answers(*RegistrationClaim.key_for(item["event_id"], item["user_id"]))
            _remove_answers(item["PK"], item["SK"])
        start = page.get("LastEvaluatedKey")
        if not start:
            number += 1
        _retention_update(retention, [EventRetention.partition.set(number),
                                      EventRetention.last_key.set(json.dumps(start)) if start
                                      else EventRetention.last_key.remove()])
    return True, used


def answers_retention_sweep(*, now: datetime | None = None) -> int:
    """Erase the answers of every event whose retention has run out (the relay's periodic job,
    settings.RELAY_PERIODIC_JOBS), a bounded number of pages per run; returns how many events were finished.

    Reads only the due events (GSI1 ``RETENTION`` up to now). An event moved to a later start since its
    retention was set is put back to its new due time instead.
    """
    now = now or utcnow()
    finished, pages = 0, RETENTION_PAGES_PER_RUN
    due = list(EventRetention.due.query(EventRetention.COLLECTION,
                                        EventRetention.gsi1sk <= EventRetention.listing_key(now, "~"),
                                        limit=RETENTION_EVENTS_PER_RUN))
    for retention in due:
        if pages <= 0:
            break
        try:
            event = registration_selectors.event_get(event_id=retention.event_id)
        except RegistrationError:
            event = None
        if event is not None:
            due_at = EventRetention.due_for(event.starts_at, int(retention.days))
            if due_at > now:
                _retention_update(retention, [EventRetention.due_at.set(due_at),
                                              EventRetention.gsi1sk.set(EventRetention.listing_key(due_at,
                                                                                                   event.event_id))])
                continue
            done, used = _erase_event_answers(event, retention, pages=pages)
            pages -= used
            if not done:
                continue
        _retention_update(retention, [EventRetention.done_at.set(now), EventRetention.gsi1pk.remove(),
                                      EventRetention.gsi1sk.remove()])
        finished += 1
    return finished


def _retention_update(retention: EventRetention, actions: list) -> None:
    """The job's own changes to a retention (progress, done, a new due time): not under the version read, so a
    lost answer's retry, or staff saving meanwhile, cannot strand the job on a stale version; only while the
    retention exists (staff may have removed it)."""
    try:
        retention.update(actions=actions, condition=EventRetention.pk.exists(), add_version_condition=False)
    except UpdateError as error:
        if not is_conditional_check_failed(error):
            raise
