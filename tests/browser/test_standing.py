"""What a student is told of a registration, in Chromium: after staff call an event off no page shows a ticket or
"confirmed" and the calendar file and feed say CANCELLED one SEQUENCE on; in offer mode the waiting page names
the window, an offer its end with date, time and zone, and Decline asks first; a bad feed link is a readable 404.
Every page axe-clean (no violation at all); the calling-off and offer-mode flows run on a phone and check each of
their pages at a phone's width and a desktop's."""

import re
import uuid
from datetime import UTC, datetime
from urllib.parse import urlsplit

from icalendar import Calendar
from playwright.sync_api import expect

from registrations import selectors, services
from registrations.events import services as event_services
from tems.accounts import calendar_feed_token
from tems.identity import user_key
from tests.browser.helpers import log_in_as
from tests.browser.pages import DESKTOP, PHONE, axe_violations, axe_violations_at_both_widths, new_sized_page
from tests.registrations.helpers import register


def vevent(body: bytes):
    [entry] = Calendar.from_ical(body).walk("VEVENT")
    return entry


def test_after_staff_call_the_event_off_no_page_shows_a_ticket(app_server, browser, contexts, student):
    event = event_services.event_create(title="Rooftop astronomy", starts_at=datetime(2030, 6, 1, 21, tzinfo=UTC),
                                        capacity=5, created_by="staff")
    seat = register(event.event_id, user_key(student), user_name="student1").data["registration_id"]
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, student)
    ics_url = f"{app_server}/registrations/{seat}/calendar.ics"
    feed_url = f"{app_server}/me/calendar.ics?token={calendar_feed_token(user=student)}"
    before = vevent(page.request.get(ics_url).body())
    assert str(before["status"]) == "CONFIRMED"

    event_services.event_cancel_once(event_id=event.event_id, user_id="staff-key", cancelled_by="staff",
                                     idempotency_key=str(uuid.uuid4()), fingerprint="cancel")

    page.goto(f"{app_server}/events/")
    card = page.locator(".event-card", has_text="Rooftop astronomy")
    expect(card.locator(".card-status")).to_have_text("Event cancelled")
    expect(card).not_to_contain_text("Confirmed")
    assert axe_violations_at_both_widths(page) == []
    page.goto(f"{app_server}/events/{event.event_id}/")
    expect(page.locator(".registration-card")).to_contain_text("Event cancelled")
    for gone in ("Confirmed", "Show this code at the door"):
        expect(page.locator("main")).not_to_contain_text(gone)
    expect(page.locator("img.qr-code")).to_have_count(0)
    assert axe_violations_at_both_widths(page) == []
    page.goto(f"{app_server}/me/registrations/")
    expect(page.locator(".registration-row")).to_contain_text("Event cancelled")
    expect(page.locator(".registration-row")).not_to_contain_text("Confirmed")
    expect(page.get_by_text("Show QR code")).to_have_count(0)
    expect(page.locator("img.qr-code")).to_have_count(0)
    assert axe_violations_at_both_widths(page) == []

    for url in (ics_url, feed_url):
        after = vevent(page.request.get(url).body())
        assert str(after["status"]) == "CANCELLED" and str(after["uid"]) == str(before["uid"])
        assert int(after["sequence"]) == int(before["sequence"]) + 1


def test_offer_mode_names_the_window_the_deadline_and_asks_before_declining(app_server, browser, contexts, student):
    event = event_services.event_create(title="Offer club", starts_at=datetime(2030, 7, 1, 18, tzinfo=UTC),
                                        capacity=1, created_by="staff", offer_hours=24)
    holder = register(event.event_id, "holder").data["registration_id"]
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, student)
    page.goto(f"{app_server}/events/{event.event_id}/")
    expect(page.locator("#registration-panel")).to_contain_text("has 24 hours to accept it")
    page.get_by_role("button", name="Join the waiting list").click()
    expect(page.locator(".waiting-note")).to_contain_text("you have 24 hours to accept the seat")
    expect(page.locator("#registration-panel")).not_to_contain_text("need do nothing")
    assert axe_violations_at_both_widths(page) == []

    services.registration_cancel(user_id="holder", registration_id=holder)  # the seat is offered to the student
    page.goto(f"{app_server}/events/{event.event_id}/")
    deadline = page.locator(".offer-text time")
    expect(deadline).to_have_text(re.compile(r"^\w{3} \d{1,2} \w{3} \d{4}, \d\d:\d\d [A-Z]{3,5}$"))
    expect(page.locator(".offer-left")).to_contain_text("left")
    expect(page.get_by_role("link", name="Add to calendar")).to_have_count(0)
    assert axe_violations_at_both_widths(page) == []

    page.get_by_text("Decline…").click()
    question = page.locator(".decline-question")
    expect(question).to_be_visible()
    expect(question).to_contain_text("Decline this seat?")
    assert selectors.registration_list(user_id=user_key(student))[0]["status"] == "offered"  # asking changed nothing
    assert axe_violations_at_both_widths(page) == []
    page.get_by_role("button", name="Yes, decline the seat").click()
    expect(page.locator(".panel-notice")).to_contain_text("You declined the seat")
    assert selectors.registration_list(user_id=user_key(student)) == []


def test_a_hostile_feed_link_is_a_readable_404(app_server, browser, contexts):
    page = new_sized_page(browser, DESKTOP, contexts)
    for token in ("", "forged", "1.0:AAAA", "<svg onload=alert(1)>", "x" * 3000):
        response = page.request.get(f"{app_server}/me/calendar.ics", params={"token": token})
        assert response.status == 404 and "calendar link is not valid" in response.text(), token[:40]


def served(app_server: str, url: str) -> str:
    """``url`` (absolute on the site's public address) on the test's live server."""
    parts = urlsplit(url)
    return f"{app_server}{parts.path}?{parts.query}"


def test_the_account_page_offers_the_feed_and_replacing_it_kills_the_old_link(app_server, browser, contexts,
                                                                               student):
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, student)
    page.goto(f"{app_server}/accounts/")
    subscribe = page.get_by_role("link", name="Subscribe in your calendar app")
    assert subscribe.get_attribute("href").startswith("webcal://")
    old = served(app_server, page.get_by_label("Or paste this link into your web calendar").input_value())
    assert page.request.get(old).status == 200
    assert axe_violations(page) == []
    page.get_by_role("button", name="Replace the link").click()
    expect(page.get_by_text("Your old calendar link no longer works.")).to_be_visible()
    answer = page.request.get(old)
    assert answer.status == 404 and "calendar link is not valid" in answer.text()
    new = served(app_server, page.get_by_label("Or paste this link into your web calendar").input_value())
    assert new != old and page.request.get(new).status == 200
    assert axe_violations(page) == []
