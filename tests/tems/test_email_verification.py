"""Finding 7: TEMS mails only addresses proven by a signed link, and bounds the mail each account gets."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.core import signing
from django.test import Client

from registrations import services
from tems.accounts import (
    email_address_mark_verified,
    email_address_verified,
    email_verification_token,
    mail_quota_take,
)
from tems.identity import user_key
from tems.models import MailQuota
from tems.outbox import outbox_pending, outbox_relay
from tests.registrations.helpers import make_event, register

SIGNUP = {"first_name": "Nadia", "username": "newbie", "email": "newbie@uni.test", "password1": "a-Long-pass-2026",
          "password2": "a-Long-pass-2026"}
LINK = re.compile(r"http://testserver(/accounts/verify-email/[^/\s]+/)")


def sign_up(client: Client) -> User:
    assert client.post("/accounts/signup/", SIGNUP).status_code == 302
    return User.objects.get(username="newbie")


@pytest.mark.django_db
def test_sign_up_mails_a_link_and_only_a_post_to_it_verifies(client, mailoutbox, moto_ddb):
    user = sign_up(client)
    assert [mail.to for mail in mailoutbox] == [["newbie@uni.test"]]
    assert not email_address_verified(user=user)
    assert "Your e-mail address is not confirmed yet" in client.get("/events/").text

    path = LINK.search(mailoutbox[0].body).group(1)
    stranger = Client()  # the link works without a session, e.g. opened on a phone
    page = stranger.get(path)
    assert page.status_code == 200 and "Confirm my address" in page.text
    assert not email_address_verified(user=user)  # a mail scanner fetching the link proves nothing

    assert stranger.post(path).status_code == 302
    assert email_address_verified(user=user)
    assert "not confirmed yet" not in client.get("/events/").text


@pytest.mark.django_db
def test_forged_tampered_expired_and_stale_links_are_refused(client, student, monkeypatch):
    forged = signing.dumps({"user": student.pk, "email": student.email}, compress=True)  # right data, wrong salt
    tampered = email_verification_token(user=student)[:-2] + "xx"
    for token in (forged, tampered):
        response = client.post(f"/accounts/verify-email/{token}/")
        assert response.status_code == 400 and "This link is not valid" in response.text

    token = email_verification_token(user=student)
    later = datetime.now(UTC).timestamp() + timedelta(days=4).total_seconds()
    monkeypatch.setattr(signing.time, "time", lambda: later)
    response = client.post(f"/accounts/verify-email/{token}/")
    assert response.status_code == 400 and "This link has expired" in response.text
    monkeypatch.undo()

    student.email = "someone-else@uni.test"
    student.save()
    response = client.post(f"/accounts/verify-email/{token}/")
    assert response.status_code == 400 and "no longer uses" in response.text
    assert not email_address_verified(user=student)


@pytest.mark.django_db
def test_changing_the_address_makes_it_unverified_again(student):
    email_address_mark_verified(user=student)
    assert email_address_verified(user=student)
    student.email = "new@uni.test"
    student.save()
    assert not email_address_verified(user=student)


@pytest.mark.django_db
def test_verification_mails_are_bounded_per_hour(client, mailoutbox, settings, moto_ddb):
    settings.TEMS_VERIFICATION_MAILS_PER_HOUR = 3
    sign_up(client)
    for _ in range(2):
        client.post("/accounts/verify-email/")
    assert len(mailoutbox) == 3
    response = client.post("/accounts/verify-email/", follow=True)
    assert "several links in the last hour" in response.text
    assert len(mailoutbox) == 3


@pytest.mark.django_db
def test_mail_quota_counts_per_clock_hour_and_forgets_old_hours(student):
    ten = datetime(2027, 5, 1, 10, 5, tzinfo=UTC)
    assert mail_quota_take(user=student, kind="k", limit=2, now=ten)
    assert mail_quota_take(user=student, kind="k", limit=2, now=ten + timedelta(minutes=40))
    assert not mail_quota_take(user=student, kind="k", limit=2, now=ten + timedelta(minutes=50))
    assert mail_quota_take(user=student, kind="other", limit=2, now=ten)  # kinds are counted apart
    assert mail_quota_take(user=student, kind="k", limit=2, now=ten + timedelta(minutes=56))
    assert MailQuota.objects.filter(user=student, kind="k").count() == 1
    assert mail_quota_take(user=student, kind="k", limit=0, now=ten)  # 0: no bound


@pytest.fixture
def students(db):
    return [User.objects.create_user(f"v{n}", f"v{n}@uni.test", "pw-x-123456") for n in range(2)]


def test_the_relay_does_not_mail_an_unverified_address_and_consumes_the_message(ddb, students, mailoutbox):
    unverified, verified = students
    email_address_mark_verified(user=verified)
    event = make_event(capacity=5, title="Chess night")
    register(event.event_id, user_key(unverified))
    register(event.event_id, user_key(verified))
    report = outbox_relay()
    assert report.delivered == 2 and report.failed == 0
    assert [mail.to for mail in mailoutbox] == [["v1@uni.test"]]
    assert outbox_pending() == []  # consumed, not left to be retried


def test_notification_mails_are_bounded_per_account_per_hour(ddb, students, mailoutbox, settings):
    settings.TEMS_NOTIFICATION_MAILS_PER_HOUR = 3
    student = students[0]
    email_address_mark_verified(user=student)
    event = make_event(capacity=5)
    for _ in range(3):  # the attack: register and cancel, again and again
        registration = register(event.event_id, user_key(student))
        services.registration_cancel(user_id=user_key(student), registration_id=registration.data["registration_id"])
    report = outbox_relay()
    assert report.delivered == 6 and report.failed == 0
    assert len(mailoutbox) == 3
    assert outbox_pending() == []


@pytest.mark.django_db
def test_staff_see_confirmed_addresses_in_the_admin(client, student):
    email_address_mark_verified(user=student)
    client.force_login(User.objects.create_superuser("root", "root@uni.test", "pw-root-123456"))
    page = client.get("/admin/tems/emailaddress/")
    assert page.status_code == 200 and "student1@uni.test" in page.text
