"""The outbox relay on DynamoDB Local: mails go out only for committed changes, once per message."""

import json
import threading
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from registrations import services
from tems.accounts import email_address_mark_verified
from tems.clock import utcnow
from tems.identity import user_key
from tems.outbox import LEASE, OutboxMessage, outbox_message, outbox_pending, outbox_relay
from tests.race import race
from tests.registrations.helpers import make_event


def register(event_id: str, username: str) -> None:
    # Domain data is keyed by the account's immutable key; the relay finds the recipient by it.
    services.registration_create(event_id=event_id, user_id=user_key(User.objects.get(username=username)),
                                 idempotency_key=str(uuid.uuid4()), fingerprint=f"fp-{username}")


@pytest.fixture
def students(db):
    users = [User.objects.create_user(f"s{n}", f"s{n}@uni.test", "pw-x-123456") for n in range(3)]
    for user in users:
        email_address_mark_verified(user=user)  # only a proven address is mailed (test_email_verification.py)
    return users


def test_committed_registration_is_mailed_once_then_gone(ddb, students, mailoutbox):
    event = make_event(capacity=1, title="Chess night")
    register(event.event_id, "s0")
    register(event.event_id, "s1")  # full: waitlisted
    report = outbox_relay()
    assert (report.delivered, report.failed) == (2, 0)
    subjects = sorted(mail.subject for mail in mailoutbox)
    assert subjects == ["On the waiting list: Chess night", "Registered: Chess night"]
    assert {tuple(mail.to) for mail in mailoutbox} == {("s0@uni.test",), ("s1@uni.test",)}
    assert outbox_pending() == []
    assert outbox_relay().delivered == 0 and len(mailoutbox) == 2


def test_replays_and_duplicate_taps_send_nothing_more(ddb, students, mailoutbox):
    event = make_event(capacity=5)
    register(event.event_id, "s0")
    key = str(uuid.uuid4())
    for _ in range(3):  # another tap of a registered student, replayed: no transaction commits, no message
        services.registration_create(event_id=event.event_id, user_id="s0", idempotency_key=key, fingerprint="f")
    outbox_relay()
    assert len(mailoutbox) == 1


def save_messages(count: int, message_type: str = "Test") -> None:
    for n in range(count):
        outbox_message(message_type=message_type, payload={"n": n}).save()


def test_concurrent_relays_deliver_each_message_once(ddb):
    save_messages(12)
    handled: list[int] = []
    lock = threading.Lock()

    def handler(message: OutboxMessage) -> None:
        with lock:
            handled.append(message.data["n"])

    race([lambda: outbox_relay(handlers={"Test": handler})] * 3)
    assert sorted(handled) == list(range(12))
    assert outbox_pending() == []


def test_a_failed_handler_leaves_the_message_for_after_its_lease(ddb):
    save_messages(1)
    calls = []

    def broken(message: OutboxMessage) -> None:
        calls.append("broken")
        raise ConnectionError("SMTP server down")

    start = utcnow()
    assert outbox_relay(handlers={"Test": broken}, now=lambda: start).failed == 1
    # Not due again yet (its backoff): a pass now does not even list it.
    report = outbox_relay(handlers={"Test": lambda m: calls.append("ok")}, now=lambda: start)
    assert (report.delivered, report.failed, report.skipped) == (0, 0, 0)
    later = start + LEASE + timedelta(seconds=1)
    assert outbox_relay(handlers={"Test": lambda m: calls.append("ok")}, now=lambda: later).delivered == 1
    assert calls == ["broken", "ok"]
    assert outbox_pending() == []


def test_a_message_without_a_handler_stays(ddb):
    save_messages(1, message_type="Unknown")
    assert outbox_relay(handlers={}).skipped == 1
    assert [m.message_type for m in outbox_pending()] == ["Unknown"]


# --- lost answers, crashes and a failing backlog ----------------------------------------------------------

def test_claim_answer_lost_is_still_delivered_in_the_same_pass(ddb):
    from tests.support.faults import LOST, Fault, inject

    save_messages(1)
    handled = []
    with inject(Fault(LOST, times=1, when=lambda params: "claimed_by" in json.dumps(params))) as faults:
        report = outbox_relay(handlers={"Test": lambda m: handled.append(m.message_id)})
    assert faults.fired(LOST)
    assert report.delivered == 1 and len(handled) == 1
    assert outbox_pending() == []


def test_delete_answer_lost_counts_as_delivered_once(ddb):
    from tests.support.faults import LOST, Fault, inject

    save_messages(1)
    handled = []
    def is_delete(params) -> bool:
        if "TransactItems" in params:
            return any("Delete" in item for item in params["TransactItems"])
        return "Key" in params and "UpdateExpression" not in params

    with inject(Fault(LOST, operations={"DeleteItem", "TransactWriteItems"}, times=1, when=is_delete)) as faults:
        report = outbox_relay(handlers={"Test": lambda m: handled.append(m.message_id)})
    assert faults.fired(LOST)
    assert (report.delivered, report.failed, len(handled)) == (1, 0, 1)
    assert outbox_pending() == []


class Crash(BaseException):
    pass


def test_relay_killed_between_send_and_delete_resends_with_the_same_message_id(ddb, students, mailoutbox,
                                                                                monkeypatch):
    event = make_event(capacity=2, title="Chess night")
    register(event.event_id, "s0")
    start = utcnow()

    def die(*args, **kwargs):
        raise Crash

    monkeypatch.setattr("tems.outbox._delete", die)
    with pytest.raises(Crash):
        outbox_relay(now=lambda: start)
    monkeypatch.undo()
    outbox_relay(now=lambda: start + LEASE + timedelta(seconds=1))
    assert len(mailoutbox) == 2  # at least once: the mail went out again after the lease
    ids = [mail.extra_headers.get("Message-ID") for mail in mailoutbox]
    assert ids[0] and ids[0] == ids[1]
    # A receiver that keeps the first of each Message-ID sees exactly one mail.
    assert len({message_id for message_id in ids}) == 1


def test_a_backlog_of_failing_messages_never_blocks_the_rest(ddb):
    save_messages(5, message_type="Broken")
    start = utcnow()

    def broken(message):
        raise ConnectionError("SMTP refuses this one")

    handled = []
    handlers = {"Broken": broken, "Test": lambda m: handled.append(m.data["n"])}
    assert outbox_relay(handlers=handlers, limit=5, now=lambda: start).failed == 5
    save_messages(1)
    # The broken five are due again after their lease, but they are not first in line any more.
    later = start + LEASE + timedelta(seconds=1)
    outbox_relay(handlers=handlers, limit=5, now=lambda: later)
    assert handled == [0]


def test_check_invariants_reports_stale_outbox_messages(ddb):
    from tems.invariants import check_all
    from tems.outbox import STALE_AFTER

    outbox_message(message_type="Test", payload={"n": 1}).save()
    old = outbox_message(message_type="Test", payload={"n": 2}, now=utcnow() - STALE_AFTER - timedelta(minutes=1))
    old.save()
    [problems] = [found for name, found in check_all().items() if name.startswith("outbox messages")]
    assert len(problems) == 1 and old.pk in problems[0]


def test_messages_spread_over_index_buckets_and_the_relay_reads_them_all(ddb):
    save_messages(48)
    buckets = {message.gsi1pk for message in OutboxMessage.listed()}
    assert len(buckets) > 8  # 48 ids over 16 buckets
    pending = outbox_pending(limit=10)
    assert len(pending) == 10 and [m.gsi1sk for m in pending] == sorted(m.gsi1sk for m in pending)
    delivered: list[str] = []
    report = outbox_relay(handlers={"Test": lambda message: delivered.append(message.message_id)})
    assert report.delivered == 48 and len(set(delivered)) == 48
    assert outbox_pending() == []
