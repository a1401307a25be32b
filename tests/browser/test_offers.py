"""A seat offered from the waiting list, in Chromium: accepted on the event page (htmx), declined on My
registrations (a plain form), and refused once it ran out; each page axe-clean. Accepting runs on a phone, and the
event page before and after it is checked at a phone's width and a desktop's."""

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations import selectors, services
from registrations.events import services as event_services
from registrations.offers import services as offers
from tems.clock import utcnow
from tems.identity import user_key
from tests.browser.helpers import log_in_as
from tests.browser.pages import (
    DESKTOP,
    PHONE,
    new_sized_page,
    serious_axe_violations,
    serious_axe_violations_at_both_widths,
)
from tests.registrations.helpers import register


@pytest.fixture
def offered(app_server, student):
    """``student`` holds the offer of the one seat of an event in offer mode; "next-in-line" waits behind."""
    event = event_services.event_create(title="Offer club", starts_at=datetime(2030, 7, 1, 18, tzinfo=UTC), capacity=1,
                                  created_by="staff", offer_hours=24)
    holder = register(event.event_id, "holder").data["registration_id"]
    register(event.event_id, user_key(student), user_name="student1")
    register(event.event_id, "next-in-line")
    services.registration_cancel(user_id="holder", registration_id=holder)
    return event


def status_of(student) -> str | None:
    rows = selectors.registration_list(user_id=user_key(student))
    return rows[0]["status"] if rows else None


def test_accepting_on_the_event_page_gives_the_seat(app_server, browser, contexts, offered, student):
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, User.objects.get(username="student1"))
    page.goto(f"{app_server}/events/{offered.event_id}/")
    expect(page.locator(".offer-text")).to_contain_text("A seat is yours until")
    assert serious_axe_violations_at_both_widths(page) == []
    page.get_by_role("button", name="Accept the seat").click()
    notice = page.locator(".panel-notice")
    expect(notice).to_contain_text("The seat is yours")
    expect(notice).to_be_focused()
    expect(page.get_by_text("You have a seat.")).to_be_visible()
    assert status_of(student) == "confirmed"
    assert serious_axe_violations_at_both_widths(page) == []


def test_declining_on_my_registrations_passes_the_seat_on(app_server, browser, contexts, offered, student):
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, User.objects.get(username="student1"))
    page.goto(f"{app_server}/me/registrations/")
    expect(page.locator(".registration-row")).to_contain_text("Seat offered")
    assert serious_axe_violations(page) == []
    page.get_by_text("Decline…").click()  # asks first
    page.get_by_role("button", name="Yes, decline the seat").click()
    expect(page.get_by_text("You declined the seat: it goes to the next in line.")).to_be_visible()
    assert status_of(student) is None
    assert selectors.registration_list(user_id="next-in-line")[0]["status"] == "offered"


def test_an_offer_that_ran_out_is_refused_and_said_so(app_server, browser, contexts, offered, student, monkeypatch):
    page = new_sized_page(browser, DESKTOP, contexts)
    log_in_as(page, app_server, User.objects.get(username="student1"))
    page.goto(f"{app_server}/events/{offered.event_id}/")
    later = utcnow() + timedelta(hours=25)
    monkeypatch.setattr(offers, "utcnow", lambda: later)  # the server's clock, a day on: the offer has ended
    page.get_by_role("button", name="Accept the seat").click()
    expect(page.locator(".panel-notice")).to_contain_text("This offer has run out")
    assert status_of(student) is None
    assert selectors.registration_list(user_id="next-in-line")[0]["status"] == "offered"
    assert serious_axe_violations(page) == []
