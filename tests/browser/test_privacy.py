"""A student finds their data from the account page, downloads it and erases their account; staff set an event's
answer retention. The flows run on a phone; every one of these pages passes axe-core at both widths."""

import json
from datetime import UTC, datetime

from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations import selectors
from registrations.events import services as event_services
from registrations.privacy.selectors import retention_get
from tems.identity import user_key
from tests.browser.helpers import log_in_as
from tests.browser.pages import PHONE, new_sized_page, serious_axe_violations_at_both_widths
from tests.registrations.helpers import register


def test_a_student_downloads_then_erases_their_data(app_server, browser, contexts, student):
    event = event_services.event_create(title="Privacy picnic", starts_at=datetime(2030, 6, 1, 12, tzinfo=UTC),
                                  capacity=1, created_by="staff")
    mine = register(event.event_id, user_key(student), user_name="student1").data
    register(event.event_id, "next-in-line")
    checked = {}
    page = new_sized_page(browser, PHONE, contexts, accept_downloads=True)
    log_in_as(page, app_server, User.objects.get(username="student1"))

    page.goto(f"{app_server}/accounts/")
    checked["/accounts/"] = serious_axe_violations_at_both_widths(page)
    page.get_by_role("link", name="Download everything TEMS holds about you, or erase your account").click()
    expect(page.get_by_role("heading", name="Your data", level=1)).to_be_visible()
    checked["/me/data/"] = serious_axe_violations_at_both_widths(page)

    with page.expect_download() as download:
        page.get_by_role("link", name="Download my data").click()
    exported = json.loads(open(download.value.path(), encoding="utf-8").read())
    assert exported["account"]["username"] == "student1"
    assert [entry["registration_id"] for entry in exported["registrations"]] == [mine["registration_id"]]

    page.get_by_label("Type your username to confirm").fill("student2")
    page.get_by_role("button", name="Erase my account and data").click()
    expect(page.locator(".field-error")).to_contain_text("not your username")
    checked["/me/data/erase/ (refused)"] = serious_axe_violations_at_both_widths(page)
    assert User.objects.filter(username="student1").exists()

    page.get_by_label("Type your username to confirm").fill("student1")
    page.get_by_role("button", name="Erase my account and data").click()
    expect(page.get_by_role("heading", name="Your account is erased")).to_be_visible()
    expect(page.get_by_text("the seats went to the people waiting")).to_be_visible()
    checked["/me/data/erase/"] = serious_axe_violations_at_both_widths(page)
    expect(page.get_by_role("link", name="Log in")).to_be_visible()  # logged out
    assert not User.objects.filter(username="student1").exists()
    assert selectors.claim_get(event_id=event.event_id, user_id="next-in-line").status == "confirmed"
    assert checked == {path: [] for path in checked}


def test_staff_set_the_answer_retention_of_an_event(app_server, browser, contexts, staff_user):
    event = event_services.event_create(title="Survey day", starts_at=datetime(2030, 6, 2, 12, tzinfo=UTC), capacity=5,
                                  created_by="staff")
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, User.objects.get(username="staffer"))
    page.goto(f"{app_server}/events/{event.event_id}/")
    page.locator("details.actions-menu > summary").click()  # the event's other actions fold under "More"
    page.get_by_role("link", name="Answer retention").click()
    assert serious_axe_violations_at_both_widths(page) == []
    days = page.get_by_label("Erase answers this many days after the event")
    days.fill("-4")
    page.get_by_role("button", name="Save").click()
    # The browser holds the form back (the field says min 0); the server refuses it too (tests of the views).
    assert days.evaluate("field => field.validity.valid") is False
    assert retention_get(event_id=event.event_id) is None
    page.get_by_label("Erase answers this many days after the event").fill("30")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Answers are erased from Tue 2 Jul 2030, 13:00 BST")).to_be_visible()
    assert serious_axe_violations_at_both_widths(page) == []
