"""The edit conflict panel, a started event without JavaScript and a waiting-list position, for events in Chromium
on a 390×844 phone (DynamoDB Local); the conflict panel is checked unclipped at a phone's width and a desktop's."""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User

from registrations import selectors
from registrations.events import services as event_services
from tems.identity import user_key
from tests.browser.helpers import signed_in
from tests.browser.pages import PHONE, at_both_widths, outside_the_screen
from tests.registrations.helpers import make_event, register

pytestmark = pytest.mark.browser

def page_as(browser, live_server, user, viewport, *, javascript=True):
    context = browser.new_context(viewport=viewport, java_script_enabled=javascript)
    return signed_in(context, live_server.url, user).new_page()


def test_the_event_panel_merges_and_shows_a_clash_readably(ddb, browser, live_server, transactional_db):
    staff = User.objects.create_user("ana", "ana@uni.test", "pw-ana-12345", is_staff=True)
    event = make_event(capacity=4, title="Chess club", location="Room 1",
                       starts_at=datetime(2027, 5, 1, 17, 0, tzinfo=UTC))
    page = page_as(browser, live_server, staff, PHONE)
    page.goto(f"{live_server.url}/events/{event.event_id}/edit/")
    event_services.event_update(event_id=event.event_id, expected_version=1, title="Chess club", description="",
                          location="Great Hall", starts_at=event.starts_at, capacity=6, updated_by="bo")
    page.fill("input[name=title]", "Chess night")  # only mine: applied
    page.fill("input[name=capacity]", "8")  # both changed: the clash
    page.click("#event-edit-form button[type=submit]")
    panel = page.locator(".conflict")
    panel.wait_for()
    text = panel.inner_text()
    assert "You opened version 1; it is at version 2 now." in text and "1 -> 2" not in text
    assert "Sat 1 May 2027, 18:00" in text and "2027-05-01T" not in text  # a human date, local time
    clash = panel.locator("tr.merge-clash")
    assert clash.count() == 1 and "6" in clash.inner_text() and "8" in clash.inner_text()
    assert at_both_widths(page, lambda page: outside_the_screen(page, panel.locator("td"))) == []
    assert page.input_value("input[name=location]") == "Great Hall"  # theirs kept in the form

    page.click("text=Save the form’s values on top of v2")
    page.wait_for_url(f"{live_server.url}/events/{event.event_id}/")
    stored = selectors.event_get(event_id=event.event_id)
    assert (stored.title, stored.location, int(stored.capacity), int(stored.version)) == (
        "Chess night", "Great Hall", 8, 3)


def test_a_started_event_says_registration_closed_without_javascript(ddb, browser, live_server, transactional_db):
    student = User.objects.create_user("stu", "stu@uni.test", "pw-stu-12345")
    event = make_event(capacity=4, title="Yesterday", starts_at=datetime.now(UTC) - timedelta(hours=1))
    page = page_as(browser, live_server, student, PHONE, javascript=False)
    page.goto(f"{live_server.url}/events/{event.event_id}/")
    assert "Registration closed" in page.inner_text("#registration-panel")
    assert page.locator("#registration-panel button").count() == 0


def test_a_waitlisted_card_and_page_show_the_position(ddb, browser, live_server, transactional_db):
    student = User.objects.create_user("stu", "stu@uni.test", "pw-stu-12345")
    first = User.objects.create_user("first", "first@uni.test", "pw-first-1234")
    event = make_event(capacity=1, title="Robot night", starts_at=datetime(2027, 5, 1, 17, tzinfo=UTC))
    register(event.event_id, user_key(first))
    register(event.event_id, user_key(student))
    page = page_as(browser, live_server, student, PHONE)
    page.goto(f"{live_server.url}/events/")
    assert page.locator(".event-card .card-status").inner_text() == "Waiting list #1"
    page.goto(f"{live_server.url}/events/{event.event_id}/")
    assert page.locator("#registration-panel img.qr-code").count() == 0
    assert page.locator("#registration-panel .position").inner_text() == "1"
    assert page.get_by_role("link", name="Add to calendar").is_visible()
