"""The account pages in Chromium, run on a 390×844 phone: forgot password, the mailed link, a new password, the
account page's names and password change: each passes axe-core with no violation at all, and nothing is wider than
the screen, each page checked at a phone's width and a desktop's. And the staff attendee list with names, without an
axe violation at either width."""

from datetime import UTC, datetime

from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from playwright.sync_api import expect

from registrations.events import services as event_services
from tems.accounts import email_address_mark_verified
from tems.identity import user_key
from tests.browser.helpers import log_in, log_in_as
from tests.browser.pages import PHONE, at_both_widths, axe_violations_at_both_widths, new_sized_page, sideways_scroll
from tests.registrations.helpers import register

NEW_PASSWORD = "a-Fresh-pass-2026"


def checked(page, name: str, found: dict[str, list[str]]) -> None:
    found[name] = axe_violations_at_both_widths(page) + at_both_widths(page, sideways_scroll)


def test_forgot_password_to_a_new_password(app_server, browser, contexts, student):
    email_address_mark_verified(user=student)
    found: dict[str, list[str]] = {}
    page = new_sized_page(browser, PHONE, contexts)
    page.goto(f"{app_server}/accounts/login/")
    page.get_by_role("link", name="Forgot password?").click()
    expect(page.get_by_role("heading", name="Forgot your password?")).to_be_visible()
    checked(page, "reset form", found)
    page.get_by_label("Email").fill("not an address")
    page.get_by_role("button", name="Send me a link").click()
    checked(page, "reset form with an error", found)
    page.get_by_label("Email").fill("student1@uni.test")
    page.get_by_role("button", name="Send me a link").click()
    expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()
    checked(page, "reset sent", found)

    # The link the mail carries (the mail itself is followed through SMTP in tests/tems/test_password_reset.py).
    uid = urlsafe_base64_encode(force_bytes(student.pk))
    link = f"{app_server}/accounts/password/reset/{uid}/{default_token_generator.make_token(student)}/"
    page.goto(link)
    checked(page, "new password form", found)
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password confirmation").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set my password").click()
    expect(page.get_by_role("heading", name="Your password is changed")).to_be_visible()
    checked(page, "reset complete", found)
    page.goto(link)
    expect(page.get_by_role("alert")).to_contain_text("This link does not work any more")
    checked(page, "used link", found)

    log_in(page, app_server, "student1", NEW_PASSWORD)
    failures = {name: violations for name, violations in found.items() if violations}
    assert failures == {}, failures


def test_the_account_page_names_and_password_change(app_server, browser, contexts, student):
    found: dict[str, list[str]] = {}
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, student)
    page.goto(f"{app_server}/accounts/")
    checked(page, "account", found)
    page.get_by_label("First name").fill("Eve\u202e")
    page.get_by_role("button", name="Save name").click()
    expect(page.locator(".field-error")).to_contain_text("Use letters, spaces and punctuation only.")
    checked(page, "account with an error", found)
    page.get_by_label("First name").fill("Zoë")
    page.get_by_label("Last name (if you have one)").fill("O'Brien")
    page.get_by_role("button", name="Save name").click()
    expect(page.get_by_text("Your name is saved.")).to_be_visible()
    student.refresh_from_db()
    assert (student.first_name, student.last_name) == ("Zoë", "O'Brien")

    page.get_by_role("link", name="Change your password").click()
    checked(page, "password change", found)
    page.get_by_label("Old password").fill("pw-student-1")
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password confirmation").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("Your password is changed.")).to_be_visible()
    failures = {name: violations for name, violations in found.items() if violations}
    assert failures == {}, failures


def test_staff_see_names_on_the_attendee_list(app_server, browser, contexts, staff_user):
    event = event_services.event_create(title="Name night", starts_at=datetime(2030, 5, 1, 18, tzinfo=UTC),
                                        capacity=5, created_by="staff")
    ines = User.objects.create_user("ines", "ines@uni.test", "pw-x-123456", first_name="Inés",
                                    last_name="García-López")
    register(event.event_id, user_key(ines), user_name="ines")
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, staff_user)
    page.goto(f"{app_server}/events/{event.event_id}/attendees/")
    expect(page.get_by_role("rowheader", name="Inés García-López")).to_contain_text("ines")
    assert axe_violations_at_both_widths(page) == []
