"""Finding events in Chromium: the search, the month calendar, a public event for a visitor and the event's new
details fit a 320 and a 390 px phone without sideways scrolling, and axe-core finds nothing on them."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations.events import services as event_services
from tems.clock import utcnow
from tests.browser.helpers import log_in_as
from tests.browser.pages import axe_violations_at_both_widths, fits_the_width, new_sized_page

pytestmark = pytest.mark.browser

WIDTHS = (320, 390)


def _events():
    soon = (utcnow() + timedelta(days=3)).replace(hour=18, minute=0, second=0, microsecond=0)
    listed = event_services.event_create(
        title="Robotics open lab with a rather long title that keeps going across the line", starts_at=soon,
        ends_at=soon + timedelta(hours=2), capacity=20, created_by="staff", location="Engineering building, lab 3",
        map_url="https://maps.example.org/a-very-long-link-to-a-map-of-the-engineering-building-lab-3",
        online_url="https://meet.example.org/robotics", category="workshop", organizer="Robotics Society",
        public=True, registration_closes_at=soon - timedelta(hours=1))
    event_services.event_create(title="Members meeting", starts_at=soon + timedelta(days=1), capacity=5,
                                created_by="staff", category="social")
    return listed, soon


def _check(page, url: str) -> list[str]:
    """The page loaded once at the narrowest width: does it fit each phone width, and what axe-core finds on a phone
    and on a desktop (a resize lays it out as a load at that width would; see ``pages.at_both_widths``)."""
    problems = []
    page.set_viewport_size({"width": WIDTHS[0], "height": 800})
    response = page.goto(url)
    assert response.status < 500, (url, response.status)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        if not fits_the_width(page):
            problems.append(f"{width} px {url}: scrolls sideways")
    return problems + [f"{url}: {violation}" for violation in axe_violations_at_both_widths(page)]


def test_search_calendar_and_event_pages_fit_a_phone_and_pass_axe(app_server, browser, contexts, student,
                                                                 staff_user):
    listed, soon = _events()
    month = soon.strftime("%Y-%m")
    visitor = new_sized_page(browser, {"width": 390, "height": 800}, contexts)
    problems = []
    for path in ("/events/", "/events/calendar/", f"/events/{listed.event_id}/", "/events/?q=robotics"):
        problems += _check(visitor, f"{app_server}{path}")
    student_page = new_sized_page(browser, {"width": 390, "height": 800}, contexts)
    log_in_as(student_page, app_server, User.objects.get(username="student1"))
    for path in ("/events/?q=robotics&category=workshop&mode=online&free=on", f"/events/calendar/?month={month}",
                 "/events/?from=2027-05-02&to=2027-05-01", "/events/calendar/?month=2027-13",
                 f"/events/{listed.event_id}/"):
        problems += _check(student_page, f"{app_server}{path}")
    staff = new_sized_page(browser, {"width": 390, "height": 800}, contexts)
    log_in_as(staff, app_server, User.objects.get(username="staffer"))
    for path in ("/events/new/", f"/events/{listed.event_id}/edit/", f"/events/{listed.event_id}/"):
        problems += _check(staff, f"{app_server}{path}")
    assert problems == [], "\n".join(problems)


def test_a_student_finds_an_event_by_a_word_and_a_visitor_sees_only_public_ones(app_server, browser, contexts,
                                                                                student):
    listed, _ = _events()
    visitor = new_sized_page(browser, {"width": 390, "height": 800}, contexts)
    visitor.goto(f"{app_server}/events/")
    expect(visitor.locator(".event-card")).to_have_count(1)
    expect(visitor.locator(".event-card")).to_contain_text("Robotics open lab")
    visitor.locator(".event-card a").click()
    expect(visitor.get_by_role("link", name="Log in to register")).to_be_visible()

    page = new_sized_page(browser, {"width": 390, "height": 800}, contexts)
    log_in_as(page, app_server, User.objects.get(username="student1"))
    page.goto(f"{app_server}/events/")
    page.get_by_label("Search").fill("members")
    page.get_by_role("button", name="Find events").click()
    expect(page.locator(".event-card")).to_have_count(1)
    expect(page.locator(".event-card")).to_contain_text("Members meeting")
    page.get_by_text("Filters: dates, category").click()  # folded until a filter is in use
    page.get_by_label("Category").select_option("workshop")
    page.get_by_role("button", name="Find events").click()
    expect(page.locator(".empty")).to_contain_text("No events match this search")
