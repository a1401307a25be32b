"""In Chromium, "More events" appends the next page in place (htmx), without leaving the page."""

from datetime import timedelta

from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations.events.models import Event
from tems.clock import utcnow
from tests.browser.helpers import log_in_as


def test_more_events_appends_the_next_page(app_server, new_page, student):
    now = utcnow()
    with Event.batch_write() as batch:
        for number in range(1, 26):
            starts, event_id = now + timedelta(hours=number), f"more{number:03d}"
            batch.save(Event(*Event.key_for(event_id), event_id=event_id, title=f"Talk {number}", starts_at=starts,
                             capacity=10, version=1, gsi1sk=Event.listing_key(starts, event_id)))
    page = new_page()
    log_in_as(page, app_server, User.objects.get(username="student1"))
    page.goto(f"{app_server}/events/")
    cards = page.locator(".event-card")
    expect(cards).to_have_count(20)
    page.get_by_role("link", name="More events").click()
    expect(cards).to_have_count(25)
    expect(page.get_by_text("Talk 25")).to_be_visible()
    expect(page.get_by_role("link", name="More events")).to_have_count(0)
    assert page.url == f"{app_server}/events/"  # appended in place, not a navigation
