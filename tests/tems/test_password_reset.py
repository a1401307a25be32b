"""Forgot password and password change: Django's views, the reset link mailed through a real SMTP server
(aiosmtpd on 127.0.0.1) only to a proven address, within the hourly mail budget; the link works once and
expires; the page never tells whether an address has an account; a failing mail server is no 5xx."""

import re
from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.test import Client

from tems.accounts import email_address_mark_verified
from tests.support.smtp import smtp_inbox, smtp_mailers

NEW_PASSWORD = "a-Fresh-pass-2026"
LINK = re.compile(r"https?://testserver(/accounts/password/reset/[^/\s]+/[^/\s]+/)")


@pytest.fixture
def inbox(settings):
    with smtp_inbox() as (received, port):
        settings.MAILERS = smtp_mailers(port)
        yield received


@pytest.fixture
def verified(student) -> User:
    email_address_mark_verified(user=student)
    return student


def ask_for_reset(client: Client, address: str) -> str:
    """The page a person sees after asking (its content: the header's CSRF token differs on every page)."""
    response = client.post("/accounts/password/reset/", {"email": address})
    assert response.status_code == 302 and response["Location"] == "/accounts/password/reset/sent/"
    page = client.get(response["Location"])
    assert page.status_code == 200
    return re.search(r"<main.*</main>", page.text, re.DOTALL).group(0)


def link_in(mail) -> str:
    return LINK.search(mail.get_payload(decode=True).decode()).group(1)


def set_password(client: Client, path: str, password: str = NEW_PASSWORD):
    """Open the mailed link and choose ``password``: Django first moves the token from the URL into the session
    (so it does not leak in a Referer), then the form is posted to that page."""
    opened = client.get(path)
    if opened.status_code != 302:
        return opened
    page = client.get(opened["Location"])
    if not page.context["validlink"]:
        return page
    return client.post(opened["Location"], {"new_password1": password, "new_password2": password})


def logs_in(username: str, password: str) -> bool:
    return Client().post("/accounts/login/", {"username": username, "password": password}).status_code == 302


@pytest.mark.django_db
def test_the_log_in_page_links_to_forgot_password(client):
    assert 'href="/accounts/password/reset/"' in client.get("/accounts/login/").text


@pytest.mark.django_db
def test_a_reset_link_through_smtp_works_once(client, inbox, verified):
    ask_for_reset(client, "STUDENT1@uni.test")  # any case of the address
    [mail] = inbox.to("student1@uni.test")
    assert mail["Subject"] == "Choose a new password for TEMS"
    body = mail.get_payload(decode=True).decode()
    assert "student1" in body and "within 2 hours" in body
    path = link_in(mail)

    done = set_password(Client(), path)  # another browser: the link needs no session
    assert done.status_code == 302 and done["Location"] == "/accounts/password/reset/done/"
    assert logs_in("student1", NEW_PASSWORD) and not logs_in("student1", "pw-student-1")

    again = set_password(Client(), path, "an-Other-pass-2026")
    assert again.status_code == 200 and "This link does not work any more" in again.text
    assert logs_in("student1", NEW_PASSWORD)


@pytest.mark.django_db
def test_a_reset_link_expires(client, inbox, verified, settings, monkeypatch):
    settings.PASSWORD_RESET_TIMEOUT = 3600
    ask_for_reset(client, "student1@uni.test")
    path = link_in(inbox.to("student1@uni.test")[0])
    later = datetime.now() + timedelta(hours=1, minutes=1)  # noqa: DTZ005 (Django's token clock is naive local time)
    monkeypatch.setattr(default_token_generator, "_now", lambda: later)
    expired = set_password(Client(), path)
    assert expired.status_code == 200 and "This link does not work any more" in expired.text
    assert logs_in("student1", "pw-student-1")


@pytest.mark.django_db
def test_a_reset_ends_the_other_sessions(client, inbox, verified):
    elsewhere = Client()
    elsewhere.force_login(verified)
    assert elsewhere.get("/accounts/").status_code == 200
    ask_for_reset(client, "student1@uni.test")
    set_password(Client(), link_in(inbox.to("student1@uni.test")[0]))
    assert elsewhere.get("/accounts/").status_code == 302  # back to the log-in page


@pytest.mark.django_db
def test_the_page_is_the_same_whoever_asks_and_only_a_proven_local_address_gets_mail(client, inbox, verified,
                                                                                    other_student):
    sso_only = User.objects.create_user("sso1", "sso1@uni.test", password=None)
    email_address_mark_verified(user=sso_only)  # proven, but no password: SSO accounts get no link
    pages = {address: ask_for_reset(Client(), address)
             for address in ("student1@uni.test", "student2@uni.test", "sso1@uni.test", "nobody@uni.test")}
    assert len(set(pages.values())) == 1, "the page tells which addresses have accounts"
    assert [recipients for recipients, _ in inbox.mails] == [["student1@uni.test"]]


@pytest.mark.django_db
def test_reset_mails_stay_within_the_hourly_budget(client, inbox, verified, settings):
    settings.TEMS_VERIFICATION_MAILS_PER_HOUR = 3
    first = ask_for_reset(client, "student1@uni.test")
    for _ in range(4):
        assert ask_for_reset(client, "student1@uni.test") == first
    assert len(inbox.to("student1@uni.test")) == 3


@pytest.mark.django_db
def test_a_failing_mail_server_is_the_same_page_not_a_5xx(client, verified, settings):
    with smtp_inbox() as (_, port):
        pass  # a port where nothing listens any more
    settings.MAILERS = smtp_mailers(port)
    assert "Check your mail" in ask_for_reset(client, "student1@uni.test")


@pytest.mark.django_db
@pytest.mark.parametrize("address", ["", "not-an-address", "a" * 300 + "@uni.test", "x\x00@uni.test"])
def test_a_hostile_address_is_a_message_not_a_5xx(client, address):
    response = client.post("/accounts/password/reset/", {"email": address})
    assert response.status_code == 200 and 'class="field-error"' in response.text


# --- password change -------------------------------------------------------------------------------------------

@pytest.mark.django_db
def test_a_student_changes_their_password_and_other_sessions_end(student_client, student):
    elsewhere = Client()
    elsewhere.force_login(student)
    assert 'href="/accounts/password/"' in student_client.get("/accounts/").text
    response = student_client.post("/accounts/password/", {"old_password": "pw-student-1",
                                                           "new_password1": NEW_PASSWORD,
                                                           "new_password2": NEW_PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/accounts/"
    assert "Your password is changed" in student_client.get("/accounts/").text  # this session stays
    assert elsewhere.get("/accounts/").status_code == 302
    assert logs_in("student1", NEW_PASSWORD)


@pytest.mark.django_db
def test_a_wrong_old_password_is_a_message(student_client):
    response = student_client.post("/accounts/password/", {"old_password": "guess", "new_password1": NEW_PASSWORD,
                                                           "new_password2": NEW_PASSWORD})
    assert response.status_code == 200 and "Your old password was entered incorrectly" in response.text
    assert logs_in("student1", "pw-student-1")


@pytest.mark.django_db
def test_an_sso_account_has_no_password_to_change(client):
    sso_only = User.objects.create_user("sso1", "sso1@uni.test", password=None)
    client.force_login(sso_only)
    assert 'href="/accounts/password/"' not in client.get("/accounts/").text
    response = client.get("/accounts/password/", follow=True)
    assert response.redirect_chain == [("/accounts/", 302)] and "TEMS keeps no password for you" in response.text


@pytest.mark.django_db
def test_password_change_needs_a_log_in(client):
    response = client.get("/accounts/password/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
@pytest.mark.parametrize("uid, token", [
    ("!!", "set-password"), ("OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5", "abc-def"), ("MQ", "x" * 2000),
    ("MQ", "set-password"), ("%00", "%00"), ("w4k", "ü-ü"),
])
def test_a_mangled_link_is_a_message_not_a_5xx(client, student, uid, token):
    response = client.get(f"/accounts/password/reset/{uid}/{token}/", follow=True)
    assert response.status_code in (200, 404)
    if response.status_code == 200:
        assert "This link does not work any more" in response.text
    assert client.post(f"/accounts/password/reset/{uid}/{token}/",
                       {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}).status_code in (200, 404)
    assert logs_in("student1", "pw-student-1")
