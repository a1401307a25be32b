"""A person in Chromium: students see events, staff create one and meet the stale-edit conflict panel."""

from datetime import UTC, datetime

from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations import selectors
from registrations.events import services as event_services
from tests.browser.helpers import log_in, log_in_as


def test_student_logs_in_and_sees_events(app_server, new_page, student):
    event_services.event_create(title="Film night", starts_at=datetime(2030, 1, 1, 19, tzinfo=UTC), capacity=30,
                          created_by="staff", location="Cinema")
    page = new_page()
    log_in(page, app_server, "student1", "pw-student-1")
    expect(page.get_by_text("Signed in as")).to_contain_text("student1")
    expect(page.get_by_text("Film night")).to_be_visible()
    expect(page.get_by_text("0 / 30 seats taken")).to_be_visible()
    expect(page.get_by_role("link", name="New event")).to_have_count(0)


def test_staff_edit_from_a_stale_page_shows_the_conflict(app_server, new_page, staff_user):
    event = event_services.event_create(title="Quiz", starts_at=datetime(2030, 2, 1, 18, tzinfo=UTC), capacity=20,
                                  created_by="staff")
    first, second = new_page(), new_page()
    for page in (first, second):
        log_in_as(page, app_server, User.objects.get(username="staffer"))
        page.goto(f"{app_server}/events/{event.event_id}/edit/")
    first.get_by_label("Title").fill("Quiz (first)")
    first.get_by_role("button", name="Save changes").click()
    first.wait_for_url(f"{app_server}/events/{event.event_id}/")

    second.get_by_label("Title").fill("Quiz (second)")
    second.get_by_role("button", name="Save changes").click()
    panel = second.locator(".conflict")
    expect(panel).to_contain_text("Someone else saved this event while you were editing")
    expect(panel).to_contain_text("Quiz (first)")
    assert selectors.event_get(event_id=event.event_id).title == "Quiz (first)"

    # Both changed the title: the form keeps mine for the person to decide, and saving applies it on top of v2.
    second.get_by_role("button", name="Save the form’s values on top of v2").click()
    second.wait_for_url(f"{app_server}/events/{event.event_id}/")
    assert selectors.event_get(event_id=event.event_id).title == "Quiz (second)"
