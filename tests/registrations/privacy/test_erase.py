"""Erasing a person, on DynamoDB Local: each live registration cancelled through the normal path (the seat to
the next in line, exactly once), the history kept under a pseudonym, no trace of the name or the address left in
the table or in Django's database, invariants clean, and a crashed erasure finished by a re-run."""

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client

from registrations import attendees
from registrations.checkins import services as checkins
from registrations.checkins.models import CheckIn
from registrations.models import Registration
from registrations.offers.models import Offer
from registrations.privacy import services as privacy
from registrations.privacy.models import Erasure
from registrations.privacy.services import personal_data_erase, pseudonym_for
from registrations.seating.shards import event_seat_counts
from registrations.services import cancel as registration_services
from registrations.ticket_tokens import ticket_token
from tems import accounts
from tems.idempotency import IdempotencyRecord
from tems.identity import UserIdentity, user_key
from tems.models import EmailAddress, SingleSignOnIdentity
from tems.outbox import OutboxMessage
from tests.helpers import assert_invariants_clean
from tests.registrations.helpers import make_event
from tests.registrations.privacy.helpers import (
    ERASED_AT,
    full_event_with_waiting,
    past_event_with,
    person,
    register_person,
    status_of,
    table_dump,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_erase_frees_the_seat_to_the_next_in_line_once_and_leaves_no_trace(ddb):
    alice = person("alice.liddell", "alice@wonder.test")
    bob, cat = person("bob", "bob@uni.test"), person("cat", "cat@uni.test")
    accounts.email_address_mark_verified(user=alice)
    SingleSignOnIdentity.objects.create(user=alice, issuer="https://idp.test", subject="sub-alice")
    AccessAttempt.objects.create(username="alice.liddell", ip_address="10.0.0.1", user_agent="t",
                                 failures_since_start=1)
    session = Client()
    session.force_login(alice)
    event, _ = full_event_with_waiting(alice, bob, cat)
    past, kept = past_event_with(alice)
    key = user_key(alice)
    assert "alice.liddell" in table_dump()

    report = personal_data_erase(user=alice, now=ERASED_AT)

    assert report.cancelled == 1 and report.pseudonymised == 1
    # The seat went to the head of the waiting list, and only to the head.
    assert (status_of(event.event_id, bob), status_of(event.event_id, cat)) == ("confirmed", "waitlisted")
    counters = event_seat_counts(event.event_id)
    assert (counters.registered, counters.waiting) == (1, 1)
    # The past event keeps its attendee, under a pseudonym, in both copies and the attendee index.
    copy = Registration.get(*Registration.event_key_for(past.event_id, kept["registration_id"]), consistent_read=True)
    assert copy.user_name == pseudonym_for(key) and copy.gsi1sk.startswith(pseudonym_for(key) + "#")
    dump = table_dump()
    for trace in ("alice.liddell", "alice@wonder.test", "Alice", "wonder.test"):
        assert trace not in dump, trace
    assert_invariants_clean()
    # Django's side: the account, its identity, address, SSO link, sessions and log-in records are gone.
    assert not User.objects.filter(username="alice.liddell").exists()
    assert not UserIdentity.objects.filter(key=key).exists()
    assert not EmailAddress.objects.filter(email="alice@wonder.test").exists()
    assert not SingleSignOnIdentity.objects.filter(subject="sub-alice").exists()
    assert not AccessAttempt.objects.filter(username="alice.liddell").exists()
    assert all(s.get_decoded().get("_auth_user_id") != str(alice.pk) for s in Session.objects.all())
    assert Erasure.get(*Erasure.key_for(key)).done_at is not None


def test_a_door_scan_answer_naming_the_person_is_redacted_not_lost(ddb, staff_user):
    alice = person("alice.liddell", "alice@wonder.test")
    event, registration = past_event_with(alice)
    checkins.checkin_create(
        event_id=event.event_id, door="north", staff_id=user_key(staff_user), staff_name="staffer",
        ticket_text=ticket_token(event_id=event.event_id, registration_id=registration["registration_id"],
                                 user_id=user_key(alice)),
        idempotency_key="door-scan-1", fingerprint="f")
    assert "alice.liddell" in table_dump()

    personal_data_erase(user=alice, now=ERASED_AT)

    dump = table_dump()
    # The door's stored answer stays (its replay still works), naming the pseudonym; the check-in is history.
    assert "alice.liddell" not in dump and "door-scan-1" in dump
    assert pseudonym_for(user_key(alice)) in dump
    assert CheckIn.get(*CheckIn.key_for(event.event_id, registration["registration_id"])).user_id == user_key(alice)
    assert_invariants_clean()


def test_an_erasure_that_crashed_after_its_cancels_is_finished_by_the_job_without_cancelling_twice(
        ddb, monkeypatch):
    alice, bob, cat, dan = (person(name, f"{name}@uni.test") for name in ("alice", "bob", "cat", "dan"))
    event, _ = full_event_with_waiting(alice, bob, cat, dan)
    key = user_key(alice)

    def crash(**_):
        raise RuntimeError("the server died here")

    monkeypatch.setattr(accounts, "account_erase", crash)
    with pytest.raises(RuntimeError):
        personal_data_erase(user=alice, now=ERASED_AT)
    assert (status_of(event.event_id, bob), status_of(event.event_id, cat)) == ("confirmed", "waitlisted")
    assert Erasure.get(*Erasure.key_for(key)).done_at is None
    monkeypatch.undo()

    # The job takes up what the request left, and the cancel it repeats is a replay of the first one.
    cancels = []
    original = privacy.registration_cancel_once
    monkeypatch.setattr(privacy, "registration_cancel_once", lambda **kw: cancels.append(kw) or original(**kw))
    assert privacy.erasures_resume(now=ERASED_AT + privacy.RESUME_AFTER) == 1
    assert (status_of(event.event_id, bob), status_of(event.event_id, cat), status_of(event.event_id, dan)) == (
        "confirmed", "waitlisted", "waitlisted")
    counters = event_seat_counts(event.event_id)
    assert (counters.registered, counters.waiting) == (1, 2)
    assert not User.objects.filter(username="alice").exists()
    assert Erasure.get(*Erasure.key_for(key)).done_at is not None
    assert "alice@uni.test" not in table_dump() and '"alice"' not in table_dump()
    assert_invariants_clean()
    # Nothing is pending any more: the next pass does nothing.
    assert privacy.erasures_resume(now=ERASED_AT + 2 * privacy.RESUME_AFTER) == 0


def test_a_re_run_cut_off_between_cancel_and_record_does_not_cancel_twice(ddb):
    alice, bob, cat = (person(name, f"{name}@uni.test") for name in ("alice", "bob", "cat"))
    event, registration = full_event_with_waiting(alice, bob, cat)
    key = user_key(alice)
    first = privacy.registration_cancel_once(
        user_id=key, registration_id=registration["registration_id"],
        idempotency_key=privacy.erase_key(user_id=key, registration_id=registration["registration_id"]),
        fingerprint=privacy.erase_fingerprint(user_id=key, registration_id=registration["registration_id"]))
    assert not first.replayed

    report = personal_data_erase(user=alice, now=ERASED_AT)

    assert report.cancelled == 0  # already cancelled under the derived key: nobody else promoted
    assert (status_of(event.event_id, bob), status_of(event.event_id, cat)) == ("confirmed", "waitlisted")
    assert_invariants_clean()


def _outbox() -> list[OutboxMessage]:
    return list(OutboxMessage.scan(OutboxMessage.pk.startswith(OutboxMessage.key_for("")[0]), consistent_read=True))


def test_the_outbox_keeps_its_messages_without_the_name(ddb):
    alice = person("alice.liddell", "alice@wonder.test")
    full_event_with_waiting(alice, capacity=2)
    before = [m.message_type for m in _outbox()]
    assert before == ["RegistrationCreated"]

    personal_data_erase(user=alice, now=ERASED_AT)

    kept = {m.message_type: m.payload for m in _outbox()}
    assert "RegistrationCreated" in kept and "alice.liddell" not in kept["RegistrationCreated"]
    assert "RegistrationCancelled" in kept


def test_a_staff_account_is_not_erased_from_its_own_page(ddb, staff_user):
    from registrations.errors import RegistrationError

    with pytest.raises(RegistrationError) as refused:
        personal_data_erase(user=staff_user, now=ERASED_AT)
    assert refused.value.code == "forbidden"
    staff_user.refresh_from_db()
    assert staff_user.is_active


def test_an_administrator_erases_a_staff_account_with_the_command(ddb, staff_user):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="administrator"):
        call_command("erase_account", "staffer")
    with pytest.raises(CommandError, match="No account"):
        call_command("erase_account", "nobody")
    call_command("erase_account", "staffer", "--staff")
    assert not User.objects.filter(username="staffer").exists()


def test_a_username_spelled_like_a_status_rewrites_nobody_elses_stored_answers(ddb):
    confirmed, bob = person("confirmed", "c@uni.test"), person("bob", "bob@uni.test")
    event = make_event(capacity=3)
    register_person(event.event_id, bob)
    register_person(event.event_id, confirmed)
    before = table_dump()
    assert before.count('\\"status\\":\\"confirmed\\"') >= 2

    personal_data_erase(user=confirmed, now=ERASED_AT)

    bobs = list(IdempotencyRecord.scan(IdempotencyRecord.pk.startswith(IdempotencyRecord.pk_for(user_key(bob), ""))))
    assert bobs and all('"status":"confirmed"' in record.response_body for record in bobs)
    assert '"user_name":"confirmed"' not in table_dump().replace("\\", "")


def test_erasing_a_person_holding_an_offer_declines_it_and_the_next_in_line_is_offered_the_seat(ddb):
    holder, bob = person("holder", "h@uni.test"), person("bob", "b@uni.test")
    alice = person("alice.offered", "ao@wonder.test")
    event = make_event(capacity=1, offer_hours=24)
    seat = register_person(event.event_id, holder).data
    offered = register_person(event.event_id, alice).data
    register_person(event.event_id, bob)
    registration_services.registration_cancel(user_id=user_key(holder), registration_id=seat["registration_id"],
                                              sleep=lambda _: None)
    assert status_of(event.event_id, alice) == "offered"

    report = personal_data_erase(user=alice, now=ERASED_AT)

    assert report.cancelled == 1
    assert Offer.get(*Offer.key_for(user_key(alice), offered["registration_id"])).state == Offer.DECLINED
    assert status_of(event.event_id, bob) == "offered"
    dump = table_dump()
    assert "alice.offered" not in dump and "ao@wonder.test" not in dump
    assert_invariants_clean()


def test_the_name_staff_saw_on_the_attendee_list_is_gone_with_the_account(ddb):
    alice = person("alice.liddell", "alice@wonder.test")
    User.objects.filter(pk=alice.pk).update(first_name="Alicia", last_name="Liddellwood")
    past, _ = past_event_with(alice)
    key = user_key(alice)
    [row] = attendees.attendee_page(event_id=past.event_id).items
    assert (row["first_name"], row["last_name"]) == ("Alicia", "Liddellwood")
    assert "Liddellwood" not in table_dump()  # names are never copied into the table

    personal_data_erase(user=alice, now=ERASED_AT)

    [row] = attendees.attendee_page(event_id=past.event_id).items
    assert (row["user"], row["first_name"], row["last_name"]) == (pseudonym_for(key), "", "")
    assert not User.objects.filter(last_name="Liddellwood").exists()
    assert "Liddellwood" not in table_dump()
