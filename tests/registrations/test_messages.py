"""Staff messages and reminders on DynamoDB Local: one message per tap, one mail per recipient, resumable fan-out.

Mails go to a real SMTP server on 127.0.0.1 (aiosmtpd), which records every delivery with its Message-ID: the
crash tests count both the deliveries and the distinct Message-IDs per recipient. Each promise is also run
against a deliberately broken variant, which the same check must catch.
"""

from __future__ import annotations

import email
import json
import socket
import threading
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from aiosmtpd.controller import Controller
from django.contrib.auth.models import User
from django.utils.html import escape

from registrations import attendees, selectors, services
from registrations.checkins import services as checkin_services
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.events.models import Event
from registrations.messages import services as messages
from registrations.messages.models import EventMessage, MessageCopy
from registrations.models import CONFIRMED, REGISTRATION_BUCKETS, WAITLISTED, Registration
from registrations.ticket_tokens import ticket_token
from tems import outbox
from tems.accounts import email_address_mark_verified
from tems.clock import utcnow
from tems.idempotency import fingerprint as request_fingerprint
from tems.identity import user_key
from tems.invariants import check_all
from tems.outbox import OutboxMessage
from tests.race import race
from tests.registrations.helpers import make_event, new_key


class RelayKilled(BaseException):
    """The relay process dying: not an Exception, so nothing in the relay catches it."""


# --- the SMTP sink ------------------------------------------------------------------------------------------

class Sink:
    """Every mail the SMTP server accepted: (recipient, Message-ID) per delivery."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[str, str]] = []
        self.mails: list[email.message.Message] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        parsed = email.message_from_bytes(envelope.original_content or envelope.content)
        with self.lock:
            self.mails.append(parsed)
            for recipient in envelope.rcpt_tos:
                self.deliveries.append((recipient, parsed["Message-ID"]))
        return "250 OK"

    def per_recipient(self) -> dict[str, Counter]:
        found: dict[str, Counter] = {}
        for recipient, message_id in self.deliveries:
            found.setdefault(recipient, Counter())[message_id] += 1
        return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def smtp(settings):
    sink = Sink()
    controller = Controller(sink, hostname="127.0.0.1", port=_free_port())
    controller.start()
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                    "OPTIONS": {"host": "127.0.0.1", "port": controller.port, "timeout": 10}}}
    settings.TEMS_NOTIFICATION_MAILS_PER_HOUR = 1000
    yield sink
    controller.stop()


# --- helpers ------------------------------------------------------------------------------------------------

def students(count: int, prefix: str = "m") -> list[User]:
    users = [User.objects.create_user(f"{prefix}{n}", f"{prefix}{n}@uni.test", "pw-x-123456") for n in range(count)]
    for user in users:
        email_address_mark_verified(user=user)
    return users


def register(event_id: str, user: User) -> dict:
    outcome = services.registration_create(event_id=event_id, user_id=user_key(user), user_name=user.username,
                                           idempotency_key=new_key(), fingerprint=f"fp-{user.pk}")
    return outcome.data


def send(event_id: str, *, key: str, audience: str = CONFIRMED, subject: str = "Room change",
         body: str = "We meet in room {101}.", user_id: str = "staff-key"):
    payload = {"audience": audience, "subject": subject, "body": body}
    return messages.message_send_once(
        event_id=event_id, user_id=user_id, created_by="staffer", idempotency_key=key,
        fingerprint=request_fingerprint(method="POST", route=f"/api/events/{event_id}/messages", user_id=user_id,
                                        payload=payload), **payload)


def relay_until_empty(*, now=None, passes: int = 50) -> None:
    """Relay passes until the outbox is empty (each pass's clock past the leases of any before it)."""
    start = now or utcnow()
    for n in range(passes):
        at = start + n * (outbox.LEASE + timedelta(seconds=1))
        outbox.outbox_relay(now=lambda at=at: at)
        if not any_due(at + outbox.LEASE * 2):
            return
    raise AssertionError("the outbox did not empty")


def any_due(at) -> bool:
    """Whether an outbox message is due by ``at`` (what ``outbox_pending`` would list), read with one consistent
    Scan of the test's small table rather than a Query per outbox bucket: the relay passes of a test pay for those
    already."""
    due_by = OutboxMessage.listing_key(at, "\U0010ffff")
    listed = OutboxMessage.pk.startswith("OUTBOX#") & (OutboxMessage.gsi1sk <= due_by)
    return any(True for _ in OutboxMessage.scan(listed, consistent_read=True))


def drain(smtp: Sink) -> None:
    """Deliver what registering and checking in queued (their own mails), and forget those mails."""
    relay_until_empty()
    smtp.deliveries.clear()
    smtp.mails.clear()


def event_messages(event_id: str) -> list[EventMessage]:
    return selectors.message_list(event_id=event_id, limit=100).items


# --- a double-click on send ---------------------------------------------------------------------------------

def double_click(event_id: str) -> list:
    key = new_key()
    return race([lambda: send(event_id, key=key)] * 4)


def test_a_double_click_on_send_writes_one_message_and_answers_it_to_every_click(ddb, db):
    event = make_event(capacity=5)
    outcomes = double_click(event.event_id)
    assert len(event_messages(event.event_id)) == 1
    assert len({outcome.response.body for outcome in outcomes}) == 1  # byte for byte
    assert sorted(outcome.replayed for outcome in outcomes) == [False, True, True, True]
    requested = [m for m in outbox.outbox_pending() if m.message_type == messages.STAFF_MESSAGE_REQUESTED]
    assert len(requested) == 1


def test_the_double_click_check_catches_a_send_without_a_derived_key(ddb, db, monkeypatch):
    """Broken: a fresh message id per click and no idempotency record. The same check sees four messages."""
    monkeypatch.setattr(messages, "_staff_message_id", lambda *args: uuid.uuid4().hex)
    monkeypatch.setattr(messages, "add_completed_record", lambda *args, **kwargs: None)
    event = make_event(capacity=5)
    double_click(event.event_id)
    assert len(event_messages(event.event_id)) == 4


def test_a_key_reused_for_another_message_is_refused(ddb, db):
    event = make_event(capacity=5)
    key = new_key()
    send(event.event_id, key=key)
    with pytest.raises(services.RegistrationError) as refused:
        send(event.event_id, key=key, subject="Something else")
    assert refused.value.code == "unprocessable"


def test_bad_fields_and_unknown_events_are_refused_before_anything_is_written(ddb, db):
    event = make_event(capacity=5)
    with pytest.raises(services.RegistrationError) as refused:
        send(event.event_id, key=new_key(), audience="everyone", subject="")
    assert refused.value.code == "invalid" and set(refused.value.errors) == {"audience", "subject"}
    with pytest.raises(services.RegistrationError) as missing:
        send("no-such-event", key=new_key())
    assert missing.value.code == "not_found"
    assert event_messages(event.event_id) == []


FANNED_OUT = "every event message is fanned out, or its fan-out waits in the outbox"


def test_an_unfinished_fan_out_without_its_outbox_message_is_an_invariant_violation(ddb, db):
    event = make_event(capacity=5)
    send(event.event_id, key=new_key())
    assert check_all()[FANNED_OUT] == []  # not fanned out yet, but its StaffMessageRequested waits
    for message in outbox.outbox_pending():
        message.delete()
    [problem] = check_all()[FANNED_OUT]
    assert event.event_id in problem


# --- audiences ----------------------------------------------------------------------------------------------

def test_each_audience_reaches_exactly_its_people(ddb, db, smtp):
    event = make_event(capacity=3, starts_at=utcnow() + timedelta(hours=2))
    users = students(5, prefix="a")
    registered = [register(event.event_id, user) for user in users]  # three seats, two waiting
    door = registered[0]
    checkin_services.checkin_create(
        event_id=event.event_id, door="main", staff_id="staff-key", idempotency_key=new_key(), fingerprint="door",
        ticket_text=ticket_token(event_id=event.event_id, registration_id=door["registration_id"],
                                 user_id=user_key(users[0])))
    drain(smtp)
    expected = {CONFIRMED: {"a0", "a1", "a2"}, messages.WAITLISTED: {"a3", "a4"}, messages.CHECKED_IN: {"a0"},
                messages.NOT_CHECKED_IN: {"a1", "a2"}}
    for audience in messages.AUDIENCES:
        send(event.event_id, key=new_key(), audience=audience, subject=f"To {audience}")
    relay_until_empty()  # the four fan-outs in the same passes: each mail's subject says which message it is
    seen: dict[str, set[str]] = {}
    for (recipient, _), mail in zip(smtp.deliveries, smtp.mails, strict=True):
        seen.setdefault(mail["Subject"], set()).add(recipient.split("@")[0])
    assert seen == {f"Open day: To {audience}": people for audience, people in expected.items()}
    assert all("We meet in room {101}." in mail.get_payload(decode=True).decode() for mail in smtp.mails)
    counted = selectors.seats_for(event=selectors.event_get(event_id=event.event_id))
    assert {audience: messages.audience_count(seats=counted, audience=audience, checked_in=1)
            for audience in messages.AUDIENCES} == {audience: len(people) for audience, people in expected.items()}
    assert all(message.done_at is not None for message in event_messages(event.event_id))
    assert {name: problems for name, problems in check_all().items() if problems} == {}


# --- a relay killed halfway through a fan-out ---------------------------------------------------------------

@pytest.fixture
def small_pages(monkeypatch):
    # Small pages and passes, so twenty registrants take several pages and passes (the continuation included), and
    # some of the attendee index's buckets more than one page.
    monkeypatch.setattr(messages, "PAGE_SIZE", 2)
    monkeypatch.setattr(messages, "PAGES_PER_PASS", 3)


def kill_after(monkeypatch, module, name: str, *, calls: int) -> None:
    """The relay dies right after the ``calls``-th call of ``module.name`` returned (its effect is done)."""
    original = getattr(module, name)
    seen = {"n": 0}

    def dying(*args, **kwargs):
        result = original(*args, **kwargs)
        seen["n"] += 1
        if seen["n"] == calls:
            raise RelayKilled(f"killed after {name} #{calls}")
        return result

    monkeypatch.setattr(module, name, dying)


def crowd(count: int) -> tuple[Event, list[User]]:
    event = make_event(capacity=count, starts_at=utcnow() + timedelta(days=3))
    users = students(count, prefix="c")
    for user in users:
        register(event.event_id, user)
    return event, users


def assert_one_copy_each(smtp: Sink, users: list[User]) -> None:
    """Every recipient got exactly one distinct Message-ID (one mail as far as any mail system can tell)."""
    per_recipient = smtp.per_recipient()
    assert set(per_recipient) == {user.email for user in users}
    assert {recipient: len(ids) for recipient, ids in per_recipient.items() if len(ids) != 1} == {}


def test_a_relay_killed_mid_fan_out_and_restarted_mails_everyone_once(ddb, db, smtp, small_pages, monkeypatch):
    event, users = crowd(20)
    drain(smtp)
    send(event.event_id, key=new_key())
    kill_after(monkeypatch, messages, "_queue_page", calls=5)  # 5 of 16+ pages queued, then the process dies
    with pytest.raises(RelayKilled):
        relay_until_empty()
    monkeypatch.undo()
    monkeypatch.setattr(messages, "PAGE_SIZE", 2)
    monkeypatch.setattr(messages, "PAGES_PER_PASS", 3)
    relay_until_empty(now=utcnow() + outbox.LEASE + timedelta(seconds=1))  # the killed relay's lease runs out
    assert_one_copy_each(smtp, users)
    assert len(smtp.deliveries) == len(users)  # the kill came between pages: nothing was sent twice
    [message] = event_messages(event.event_id)
    assert message.done_at is not None and int(message.queued) == len(users)
    # Each person's copy was written with their mail: every one of them, once, can read it on the event page.
    copies = [m for m in MessageCopy.scan(MessageCopy.entity == "MessageCopy") if m.message_id == message.message_id]
    assert sorted(copy.user_id for copy in copies) == sorted(user_key(user) for user in users)


def test_a_relay_killed_between_smtp_and_the_outbox_delete_resends_the_same_message_id(ddb, db, smtp, small_pages,
                                                                                       monkeypatch):
    """At least once over SMTP: the mail the server accepted just before the kill goes out again after the lease,
    with the same Message-ID, so the receiving side can drop it; no recipient gets a second distinct mail."""
    event, users = crowd(12)
    drain(smtp)
    send(event.event_id, key=new_key())
    original = outbox._delete

    def delete_or_die(message, *, relay_id):
        if message.message_type == messages.MESSAGE_MAIL:
            raise RelayKilled("killed after sending a mail, before deleting its outbox message")
        original(message, relay_id=relay_id)

    monkeypatch.setattr(outbox, "_delete", delete_or_die)
    with pytest.raises(RelayKilled):
        relay_until_empty()  # fans out, then sends one mail and dies
    monkeypatch.setattr(outbox, "_delete", original)
    assert len(smtp.deliveries) == 1
    relay_until_empty(now=utcnow() + outbox.LEASE + timedelta(seconds=1))
    assert_one_copy_each(smtp, users)
    repeated = {recipient: ids for recipient, ids in smtp.per_recipient().items() if sum(ids.values()) > 1}
    # The one mail delivered twice, both times with one Message-ID; every other recipient got one delivery.
    assert len(smtp.deliveries) == len(users) + 1 and len(repeated) == 1


def test_the_crash_check_catches_a_fan_out_that_queues_before_it_moves_the_cursor(ddb, db, smtp, small_pages,
                                                                                   monkeypatch):
    """Broken: each page's mails written one by one with fresh ids, the cursor moved by a later write. Killed in
    between, the restarted relay queues the page again and its recipients get two distinct mails."""
    def broken_queue_page(message, *, continue_after, now):
        recipients, stopped_at = messages._page(message)
        for recipient in recipients:
            outbox.outbox_message(message_type=messages.MESSAGE_MAIL, now=now, payload={
                "event_id": message.event_id, "message_id": message.message_id, "kind": message.kind,
                "user": recipient.user_id, "registration_id": recipient.registration_id}).save()
        if recipients and not broken_queue_page.killed:
            broken_queue_page.killed = True
            raise RelayKilled("killed between the mails and the cursor")
        partition = int(message.partition) + (stopped_at is None)
        done = partition >= len(messages._partitions(message.audience, message.event_id))
        message.update(actions=[EventMessage.partition.set(partition), EventMessage.pages.add(1),
                                EventMessage.last_key.set(json.dumps(stopped_at)) if stopped_at
                                else EventMessage.last_key.remove(),
                                *([EventMessage.done_at.set(now)] if done else [])])
        return message

    broken_queue_page.killed = False
    monkeypatch.setattr(messages, "PAGES_PER_PASS", 100)
    event, users = crowd(8)
    drain(smtp)
    monkeypatch.setattr(messages, "_queue_page", broken_queue_page)
    send(event.event_id, key=new_key())
    with pytest.raises(RelayKilled):
        outbox.outbox_relay()
    relay_until_empty(now=utcnow() + outbox.LEASE + timedelta(seconds=1))
    with pytest.raises(AssertionError):
        assert_one_copy_each(smtp, users)


# --- reminders ----------------------------------------------------------------------------------------------

def reminder_setup(smtp: Sink) -> tuple[Event, User, User, object]:
    """An event whose reminder time falls between two registrations: ``early`` before it, ``late`` after."""
    event = make_event(capacity=10, starts_at=utcnow() + timedelta(days=5))
    early, late = students(2, prefix="r")
    register(event.event_id, early)
    reminder_at = utcnow() + timedelta(milliseconds=20)
    while utcnow() <= reminder_at + timedelta(milliseconds=20):
        pass
    register(event.event_id, late)
    current = selectors.event_get(event_id=event.event_id)
    event_services.event_update(event_id=event.event_id, expected_version=int(current.version), title=current.title,
                          description="", location="", capacity=10, updated_by="staff", reminder_hours=24,
                          starts_at=reminder_at + timedelta(hours=24))
    drain(smtp)
    return event, early, late, reminder_at


def test_a_reminder_goes_once_to_those_registered_before_its_time(ddb, db, smtp):
    event, early, late, reminder_at = reminder_setup(smtp)
    sweep_at = reminder_at + messages.REMINDER_GRACE
    assert messages.reminders_sweep(now=reminder_at) == 0  # its time, not yet its grace
    assert race([lambda: messages.reminders_sweep(now=sweep_at)] * 3).count(1) <= 1
    assert messages.reminders_sweep(now=sweep_at) == 0
    relay_until_empty()
    assert [recipient for recipient, _ in smtp.deliveries] == [early.email]
    assert smtp.mails[0]["Subject"] == "Reminder: Open day"
    [reminder] = event_messages(event.event_id)
    assert reminder.kind == EventMessage.REMINDER and reminder.done_at is not None


def test_a_sweep_that_read_before_another_sweeps_write_writes_no_second_reminder(ddb, db, smtp, monkeypatch):
    """The loser of two racing sweeps, made to happen every run: its skip-read saw no reminder, and the
    reminder's own condition refuses its write."""
    event, early, late, reminder_at = reminder_setup(smtp)
    sweep_at = reminder_at + messages.REMINDER_GRACE
    assert messages.reminders_sweep(now=sweep_at) == 1
    monkeypatch.setattr(messages, "batch_get_models", lambda keys, **_: [])  # read before the first one's write
    assert messages.reminders_sweep(now=sweep_at) == 0
    monkeypatch.undo()
    relay_until_empty()
    assert [recipient for recipient, _ in smtp.deliveries] == [early.email]
    assert len(reminders(event.event_id)) == 1


def test_the_reminder_check_catches_a_sweep_that_ignores_the_reminder_time(ddb, db, smtp, monkeypatch):
    """Broken: the reminder's recipients are everyone registered by the sweep, not by the reminder's time."""
    original = messages._reminder_create
    monkeypatch.setattr(messages, "_reminder_create",
                        lambda *, event, at, now: original(event=event, at=now, now=now))
    event, early, late, reminder_at = reminder_setup(smtp)
    messages.reminders_sweep(now=reminder_at + messages.REMINDER_GRACE)
    relay_until_empty()
    assert sorted(recipient for recipient, _ in smtp.deliveries) == sorted([early.email, late.email])


def cancel_event(event_id: str) -> None:
    """The real cancellation: it sets what Event.is_cancelled reads, and queues its own notice."""
    event_services.event_cancel_once(event_id=event_id, user_id="staff-key", cancelled_by="staffer",
                               idempotency_key=new_key(), fingerprint=f"fp-cancel-{event_id}")


def reminder_recipients(smtp: Sink) -> list[str]:
    """Who got a reminder (the cancellation's own notice goes to everyone registered, and is not one)."""
    return [recipient for (recipient, _), mail in zip(smtp.deliveries, smtp.mails, strict=True)
            if mail["Subject"].startswith("Reminder:")]


def reminders(event_id: str) -> list[EventMessage]:
    return [message for message in event_messages(event_id) if message.kind == EventMessage.REMINDER]


def test_no_reminder_for_a_cancelled_event(ddb, db, smtp):
    event, early, late, reminder_at = reminder_setup(smtp)
    cancel_event(event.event_id)
    assert messages.reminders_sweep(now=reminder_at + messages.REMINDER_GRACE) == 0
    relay_until_empty()
    assert reminder_recipients(smtp) == [] and reminders(event.event_id) == []
    assert sorted(recipient for recipient, _ in smtp.deliveries) == sorted([early.email, late.email])  # the notice


def test_a_reminder_queued_before_the_event_was_cancelled_is_not_sent(ddb, db, smtp):
    event, early, late, reminder_at = reminder_setup(smtp)
    messages.reminders_sweep(now=reminder_at + messages.REMINDER_GRACE)
    outbox.outbox_relay()  # fanned out: the mail waits in the outbox
    cancel_event(event.event_id)
    relay_until_empty()
    assert reminder_recipients(smtp) == []


def test_a_reminder_written_before_the_event_was_cancelled_queues_nothing(ddb, db, smtp):
    event, early, late, reminder_at = reminder_setup(smtp)
    messages.reminders_sweep(now=reminder_at + messages.REMINDER_GRACE)
    cancel_event(event.event_id)
    relay_until_empty()
    [reminder] = reminders(event.event_id)
    assert reminder.done_at is not None and int(reminder.queued) == 0 and reminder_recipients(smtp) == []


def test_the_cancelled_check_catches_a_reminder_that_ignores_cancellation(ddb, db, smtp, monkeypatch):
    event, early, late, reminder_at = reminder_setup(smtp)
    cancel_event(event.event_id)
    monkeypatch.setattr(Event, "is_cancelled", property(lambda self: False))
    messages.reminders_sweep(now=reminder_at + messages.REMINDER_GRACE)
    relay_until_empty()
    assert reminder_recipients(smtp) == [early.email]


# --- an event's cancellation notice ---------------------------------------------------------------------------

def cancelled_crowd(confirmed: int, waiting: int) -> tuple[Event, list[User]]:
    """An event with ``confirmed`` seats taken and ``waiting`` on its waiting list, then cancelled."""
    event = make_event(capacity=confirmed, starts_at=utcnow() + timedelta(days=3))
    users = students(confirmed + waiting, prefix="x")
    for user in users:
        register(event.event_id, user)
    cancel_event(event.event_id)
    return event, users


def test_a_cancellation_relay_killed_halfway_mails_each_of_16_registrants_once(ddb, db, smtp, monkeypatch):
    # Each of the attendee index's 16 buckets is one page at this size, as at 200 (more people would add no page
    # and no path, only registrations to make; with one a bucket on average, some pages queue several and some
    # none): the relay dies after 8 of the 16 pages.
    event, users = cancelled_crowd(12, 4)
    assert sorted(selectors.claim_get(event_id=event.event_id, user_id=user_key(u)).status for u in users[-1:]) == [
        "waitlisted"]
    original = messages._queue_page
    kill_after(monkeypatch, messages, "_queue_page", calls=8)  # about half of the pages queued, then it dies
    with pytest.raises(RelayKilled):
        relay_until_empty()
    monkeypatch.setattr(messages, "_queue_page", original)
    relay_until_empty(now=utcnow() + outbox.LEASE + timedelta(seconds=1))  # the killed relay's lease runs out
    notices = [mail for mail in smtp.mails if mail["Subject"] == "Cancelled: Open day"]
    assert len(notices) == len(smtp.mails) - len(users)  # besides each registration's own "Registered" mail
    smtp.deliveries = [(recipient, mail["Message-ID"]) for (recipient, _), mail
                       in zip(smtp.deliveries, smtp.mails, strict=True) if mail in notices]
    assert_one_copy_each(smtp, users)
    assert len(smtp.deliveries) == len(users)
    [notice] = [m for m in event_messages(event.event_id) if m.kind == EventMessage.CANCELLATION]
    assert notice.done_at is not None and int(notice.queued) == len(users)
    assert {name: found for name, found in check_all().items() if found} == {}


def test_the_cancellation_crash_check_catches_a_fan_out_that_queues_before_it_moves_the_cursor(ddb, db, smtp,
                                                                                               monkeypatch):
    """Broken: each page's mails saved one by one with fresh ids and the cursor moved by a later write (as in the
    staff message's crash check). Killed in between, the restarted relay mails that page's people twice."""
    def broken_queue_page(message, *, continue_after, now):
        recipients, stopped_at = messages._page(message)
        for recipient in recipients:
            outbox.outbox_message(message_type=messages.MESSAGE_MAIL, now=now, payload={
                "event_id": message.event_id, "message_id": message.message_id, "kind": message.kind,
                "user": recipient.user_id, "registration_id": recipient.registration_id}).save()
        if recipients and not broken_queue_page.killed:
            broken_queue_page.killed = True
            raise RelayKilled("killed between the mails and the cursor")
        partition = int(message.partition) + (stopped_at is None)
        done = partition >= len(messages._partitions(message.audience, message.event_id))
        message.update(actions=[EventMessage.partition.set(partition), EventMessage.pages.add(1),
                                EventMessage.last_key.set(json.dumps(stopped_at)) if stopped_at
                                else EventMessage.last_key.remove(),
                                *([EventMessage.done_at.set(now)] if done else [])])
        return message

    broken_queue_page.killed = False
    monkeypatch.setattr(messages, "PAGES_PER_PASS", 100)
    event = make_event(capacity=12, starts_at=utcnow() + timedelta(days=3))
    users = students(16, prefix="y")
    for user in users:
        register(event.event_id, user)
    drain(smtp)
    monkeypatch.setattr(messages, "_queue_page", broken_queue_page)
    cancel_event(event.event_id)
    with pytest.raises(RelayKilled):
        outbox.outbox_relay()
    relay_until_empty(now=utcnow() + outbox.LEASE + timedelta(seconds=1))
    with pytest.raises(AssertionError):
        assert_one_copy_each(smtp, users)


def test_reminders_off_or_past_events_are_not_swept(ddb, db):
    now = utcnow()
    off = make_event(capacity=2, starts_at=now + timedelta(hours=2), reminder_hours=0)
    later = make_event(capacity=2, starts_at=now + timedelta(hours=30))  # the default: 24 h before
    assert messages.reminders_sweep(now=now) == 0
    assert event_messages(off.event_id) == [] and event_messages(later.event_id) == []


# --- an event of thousands ------------------------------------------------------------------------------------

def registration_ids(count: int, *, per_bucket: int | None = None) -> list[str]:
    """``count`` new registration ids, or ``per_bucket`` in each bucket of the attendee index."""
    if per_bucket is None:
        return [f"r{n:05d}{uuid.uuid4().hex[:8]}" for n in range(count)]
    ids: list[str] = []
    filled: Counter = Counter()
    while len(ids) < per_bucket * REGISTRATION_BUCKETS:
        candidate = f"r{len(ids):05d}{uuid.uuid4().hex[:8]}"
        if filled[Registration.bucket_for(candidate)] < per_bucket:
            filled[Registration.bucket_for(candidate)] += 1
            ids.append(candidate)
    return ids


def seed_confirmed(event_id: str, count: int = 0, *, per_bucket: int | None = None,
                   waiting_from: int | None = None) -> set[str]:
    """``count`` confirmed event-side copies (or ``per_bucket`` in each bucket) with their attendee index keys,
    written directly (registering hundreds of students one transaction at a time would take this machine minutes);
    from ``waiting_from`` on they are waitlisted instead."""
    ids = set()
    now = utcnow() - timedelta(minutes=5)
    with Registration.batch_write() as batch:
        for n, registration_id in enumerate(registration_ids(count, per_bucket=per_bucket)):
            ids.add(registration_id)
            batch.save(Registration(
                *Registration.event_key_for(event_id, registration_id), registration_id=registration_id,
                event_id=event_id, user_id=f"u{n}", user_name=f"user{n:05d}", created_at=now,
                status=CONFIRMED if waiting_from is None or n < waiting_from else WAITLISTED,
                **attendees.index_fields(event_id=event_id, name=f"user{n:05d}", registration_id=registration_id)))
    return ids


@pytest.mark.parametrize("kind", ["staff message", "cancellation notice"])
def test_hundreds_of_recipients_are_queued_a_page_at_a_time_over_many_relay_passes(ddb, db, monkeypatch, kind):
    # The production page size (its transactions are the biggest the fan-out writes), and passes of three pages:
    # 50 people in each bucket of the attendee index fill every bucket past one page (a full page, then the rest),
    # and passes end both inside a bucket and at a bucket's end, every path ten thousand took, at a twelfth of the
    # writes.
    monkeypatch.setattr(messages, "PAGES_PER_PASS", 3)
    event = make_event(capacity=5)
    if kind == "staff message":
        registered = seed_confirmed(event.event_id, per_bucket=50)
        send(event.event_id, key=new_key())
        first_pass = messages.STAFF_MESSAGE_REQUESTED
    else:  # everyone with a seat or a place in line: 560 confirmed and 240 waiting
        registered = seed_confirmed(event.event_id, per_bucket=50, waiting_from=560)
        cancel_event(event.event_id)
        first_pass = event_services.CANCELLATION_REQUESTED
    pages: list[int] = []
    original = messages._page

    def counted(message):
        recipients, stopped_at = original(message)
        pages.append(len(recipients))
        return recipients, stopped_at

    monkeypatch.setattr(messages, "_page", counted)
    # The relay's part, without sending thousands of mails: hand each pass's outbox message to the fan-out and
    # delete it. The next pass's message is the one the pass left (its id says which).
    [pending] = [m for m in outbox.outbox_pending() if m.message_type == first_pass]
    passes = 0
    while True:
        passes += 1
        assert passes < 100
        messages.message_fan_out(pending)
        pending.delete()
        message = event_messages(event.event_id)[0]
        if message.done_at is not None:
            break
        pending = OutboxMessage.get(*OutboxMessage.key_for(
            EventMessage.delivery_id_for(message.message_id, f"pass-{int(message.pages)}")))
    assert int(message.queued) == len(registered) == sum(pages)
    assert max(pages) == messages.PAGE_SIZE  # no request read more than one page of recipients, and some a full one
    assert passes >= len(registered) // (messages.PAGE_SIZE * messages.PAGES_PER_PASS)
    mails = [m for m in OutboxMessage.scan(OutboxMessage.message_type == messages.MESSAGE_MAIL)]
    assert {m.message_id for m in mails} == {EventMessage.delivery_id_for(message.message_id, registration_id)
                                             for registration_id in registered}


# --- two relays on one fan-out --------------------------------------------------------------------------------

def racing_fan_outs(event_id: str) -> tuple[EventMessage, Counter]:
    """Three relays run the same fan-out at once (a lease ran out mid-pass): the mails queued per registration."""
    send(event_id, key=new_key())
    [pending] = [m for m in outbox.outbox_pending() if m.message_type == messages.STAFF_MESSAGE_REQUESTED]
    race([lambda: messages.message_fan_out(pending)] * 3)
    queued = Counter(m.data["registration_id"]
                     for m in OutboxMessage.scan(OutboxMessage.message_type == messages.MESSAGE_MAIL))
    return event_messages(event_id)[0], queued


def test_relays_racing_on_one_fan_out_queue_each_recipient_once(ddb, db, monkeypatch):
    monkeypatch.setattr(messages, "PAGE_SIZE", 10)
    monkeypatch.setattr(messages, "PAGES_PER_PASS", 1000)
    event = make_event(capacity=5)
    registered = seed_confirmed(event.event_id, 200)
    message, queued = racing_fan_outs(event.event_id)
    assert message.done_at is not None and int(message.queued) == len(registered)
    assert set(queued) == registered and set(queued.values()) == {1}


def test_the_race_check_catches_a_fan_out_without_derived_ids_or_the_cursor_condition(ddb, db, monkeypatch):
    monkeypatch.setattr(messages, "PAGE_SIZE", 10)
    monkeypatch.setattr(messages, "PAGES_PER_PASS", 1000)
    monkeypatch.setattr(EventMessage, "delivery_id_for", staticmethod(lambda *args: uuid.uuid4().hex))
    monkeypatch.setattr(messages, "_cursor_as_read", lambda message: EventMessage.pk.exists())
    event = make_event(capacity=5)
    registered = seed_confirmed(event.event_id, 200)
    message, queued = racing_fan_outs(event.event_id)
    assert set(queued) == registered
    assert max(queued.values()) > 1  # some recipients queued twice or three times


# --- what staff preview is what is sent ---------------------------------------------------------------------

def _text(mail: email.message.Message) -> str:
    """A mail's body as its reader sees it: SMTP carries line ends as CRLF and ends the data with one."""
    text = mail.get_payload(decode=True).decode(mail.get_content_charset() or "utf-8")
    return text.replace("\r\n", "\n").removesuffix("\n")


def test_the_preview_shows_exactly_the_mail_the_smtp_server_then_receives(ddb, db, smtp, staff_client):
    event = make_event(capacity=5, location="Room {7}")
    [reader] = students(1, prefix="preview")
    register(event.event_id, reader)
    drain(smtp)
    page = f"/events/{event.event_id}/messages/"
    posted = {"audience": CONFIRMED, "subject": "Moved: {room}", "body": "Now in the hall.\nÉtage 2, {left}.",
              "step": "preview"}
    preview = staff_client.post(page, posted)
    assert preview.status_code == 200
    shown = preview.context["confirm"]["mail"]
    assert escape(shown["body"]) in preview.content.decode() and escape(shown["subject"]) in preview.content.decode()
    sent = staff_client.post(page, {**posted, "step": "send", "idempotency_key": preview.context["confirm"]["key"]})
    assert sent.status_code == 302
    relay_until_empty()
    [mail] = smtp.mails
    assert mail["Subject"] == shown["subject"] == "Open day: Moved: {room}"
    assert _text(mail) == shown["body"]
    assert shown["body"].startswith("Now in the hall.\nÉtage 2, {left}.\n\n(Sent by the organisers of Open day.)")


# --- the cancellation's reason ------------------------------------------------------------------------------

def test_every_cancellation_notice_carries_the_reason_given(ddb, db, smtp):
    event = make_event(capacity=2)
    users = students(3, prefix="called-off")
    for user in users:
        register(event.event_id, user)  # two seats and one waiting
    drain(smtp)
    reason = "The speaker is ill.\nWe will announce a new date."
    event_services.event_cancel_once(event_id=event.event_id, user_id="staff-key", cancelled_by="staffer",
                                     idempotency_key=new_key(), fingerprint="fp-reason", reason=reason)
    assert selectors.event_get(event_id=event.event_id).cancel_reason == reason
    [notice] = [m for m in event_messages(event.event_id) if m.kind == EventMessage.CANCELLATION]
    assert notice.body == reason
    [requested] = [m for m in OutboxMessage.scan() if m.message_type == event_services.CANCELLATION_REQUESTED
                   and m.data.get("event_id") == event.event_id]
    assert requested.data["reason"] == reason  # written by the cancellation's own transaction
    messages.message_fan_out(requested)
    mails = [m for m in OutboxMessage.scan() if m.message_type == messages.MESSAGE_MAIL
             and m.data.get("event_id") == event.event_id]
    assert len(mails) == 3 and all(m.data["reason"] == reason for m in mails)
    relay_until_empty()
    assert sorted(recipient for recipient, _ in smtp.deliveries) == sorted(u.email for u in users)
    assert all(f"Their reason: {reason}" in _text(mail) for mail in smtp.mails)


def test_a_cancellation_without_a_reason_says_none(ddb, db, smtp):
    event = make_event(capacity=2)
    [user] = students(1, prefix="no-reason")
    register(event.event_id, user)
    drain(smtp)
    cancel_event(event.event_id)
    relay_until_empty()
    [mail] = smtp.mails
    assert "reason" not in _text(mail) and _text(mail).startswith("Open day has been cancelled by the organisers. ")


@pytest.mark.parametrize("reason", ["x" * 501, "Ring \x07 the bell", "a\x00b", "\x1b[31mred", "line\u2028sep"])
def test_a_hostile_reason_is_refused_with_a_readable_message_and_nothing_is_cancelled(ddb, db, reason):
    event = make_event(capacity=2)
    with pytest.raises(RegistrationError) as refused:
        event_services.event_cancel_once(event_id=event.event_id, user_id="staff-key", cancelled_by="staffer",
                                         idempotency_key=new_key(), fingerprint="fp-hostile", reason=reason)
    assert refused.value.code == "invalid" and "reason" in refused.value.errors
    assert "reason" in refused.value.detail.lower()
    assert not selectors.event_get(event_id=event.event_id).is_cancelled


# --- a student reads the messages sent to them --------------------------------------------------------------

def test_a_student_reads_on_the_event_page_only_the_messages_sent_to_them(ddb, db, smtp, client):
    event = make_event(capacity=1)
    other = make_event(capacity=5, title="Other day")
    seated, waiting = students(2, prefix="reader")
    register(event.event_id, seated)
    register(event.event_id, waiting)  # full: waiting
    register(other.event_id, seated)
    drain(smtp)
    send(event.event_id, key=new_key(), subject="For the seated", body="Bring your ticket.")
    send(event.event_id, key=new_key(), audience=WAITLISTED, subject="For the waiting", body="Hold on.")
    send(other.event_id, key=new_key(), subject="Another event's news", body="Elsewhere.")
    relay_until_empty()
    seen = selectors.messages_to(user_id=user_key(seated), event_id=event.event_id)
    assert [m.subject for m in seen] == ["For the seated"]
    client.force_login(seated)
    page = client.get(f"/events/{event.event_id}/").content.decode()
    assert "Messages to you" in page and "For the seated" in page and "Bring your ticket." in page
    assert "For the waiting" not in page and "Another event" not in page
    client.force_login(waiting)
    page = client.get(f"/events/{event.event_id}/").content.decode()
    assert "For the waiting" in page and "For the seated" not in page


def test_the_student_s_messages_are_one_bounded_query_not_a_scan(ddb, db, smtp, dynamodb_calls):
    event = make_event(capacity=5)
    [reader] = students(1, prefix="bounded")
    register(event.event_id, reader)
    drain(smtp)
    for n in range(3):
        send(event.event_id, key=new_key(), subject=f"News {n}")
    relay_until_empty()
    dynamodb_calls.clear()
    seen = selectors.messages_to(user_id=user_key(reader), event_id=event.event_id, limit=2)
    assert [m.subject for m in seen] == ["News 2", "News 1"]
    assert dynamodb_calls == ["Query", "BatchGetItem"]
