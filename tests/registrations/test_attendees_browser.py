"""The attendee list in Chromium (DynamoDB Local), loaded on a phone of 390 px: at that width and a desktop's it fits
without scrolling sideways and axe finds nothing on it, on a desktop its filter is one row, and printed it is the list
alone."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations.checkins import services as checkin_services
from tems.identity import user_key
from tests.browser.helpers import signed_in
from tests.browser.pages import DESKTOP, PHONE, at_both_widths, axe_violations_at_both_widths, resized, sideways_scroll
from tests.registrations.helpers import make_event, new_key, register

pytestmark = pytest.mark.browser


@pytest.fixture
def crowded_event(ddb, transactional_db):
    """An event with a long name, a long username, a check-in and someone waiting: what makes a table wide."""
    event = make_event(capacity=2, title="Graduation ball of the faculty of engineering and applied sciences")
    people = (("maximilianalexander", "Maximilian-Alexander", "Oppenheimer-Westinghouse"), ("ines", "Inés", "García"),
              ("waiting", "Wai", "Ting"))
    for username, first, last in people:
        user = User.objects.create_user(username, f"{username}@uni.test", "pw", first_name=first, last_name=last)
        outcome = register(event.event_id, user_key(user), user_name=username)
        if username == "ines":
            checkin_services.checkin_create(event_id=event.event_id, ticket_text=outcome.data["ticket_url"],
                                            door="North entrance, left lane", staff_id="k", staff_name="staffer",
                                            idempotency_key=new_key(), fingerprint="scan")
    return event


def test_the_attendee_list_fits_the_screen_has_no_axe_violation_and_prints_alone(crowded_event, browser, live_server):
    staff = User.objects.create_user("staff2", "staff2@uni.test", "pw-staff-2", is_staff=True)
    context = signed_in(browser.new_context(viewport=PHONE, timezone_id="UTC"), live_server.url, staff)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/events/{crowded_event.event_id}/attendees/")
        expect(page.locator(".attendee-row")).to_have_count(3)
        assert at_both_widths(page, sideways_scroll) == [], "the attendee list scrolls sideways"
        assert axe_violations_at_both_widths(page) == []
        # On a wide screen the filter is one row: its labels on one line, its fields and button on another.
        with resized(page, DESKTOP):
            edges = page.evaluate("""() => [['label[for=attendee-q]', 'label[for=attendee-status]'],
                                            ['#attendee-q', '#attendee-status', '.attendee-filter button']]
                .map((row) => row.map((s) => document.querySelector(s).getBoundingClientRect())
                                 .map((box) => [Math.round(box.top), Math.round(box.bottom)]))""")
            for row in edges:
                assert len({top for top, _ in row}) == 1 and len({bottom for _, bottom in row}) == 1, edges
        page.emulate_media(media="print")
        expect(page.locator(".site-header")).to_be_hidden()
        expect(page.locator(".attendee-filter")).to_be_hidden()
        expect(page.get_by_role("link", name="Export CSV")).to_be_hidden()
        expect(page.locator(".attendee-row").first).to_be_visible()
    finally:
        context.close()
