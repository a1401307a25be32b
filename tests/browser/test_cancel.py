"""Cancelling asks first and says what it did, with and without JavaScript; Back never shows a stale panel."""

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from registrations import selectors
from registrations.events import services as event_services
from tems.identity import user_key
from tests.browser.helpers import log_in_as
from tests.browser.pages import DESKTOP, PHONE, new_sized_page
from tests.registrations.helpers import register


@pytest.fixture
def event(app_server):
    return event_services.event_create(title="Cancel club", starts_at=datetime(2030, 7, 1, 18, tzinfo=UTC), capacity=1,
                                 created_by="staff")


def test_cancel_asks_first_then_says_the_seat_went_to_the_next_person_and_leaving_the_waiting_list_says_so(
        app_server, browser, contexts, event, student):
    register(event.event_id, user_key(student))
    register(event.event_id, "next-in-line")
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, student)
    page.goto(f"{app_server}/events/{event.event_id}/")
    page.get_by_role("link", name="Cancel registration…").click()
    question = page.locator(".cancel-question")
    expect(question).to_contain_text("goes at once to the next person on the waiting list")
    expect(question).to_be_focused()
    assert selectors.registration_list(user_id=user_key(student))[0]["status"] == "confirmed"  # asking changed nothing

    page.get_by_role("link", name="Keep my seat").click()
    expect(page.get_by_role("link", name="Cancel registration…")).to_be_visible()
    page.get_by_role("link", name="Cancel registration…").click()
    page.get_by_role("button", name="Yes, cancel my registration").click()
    notice = page.locator(".panel-notice")
    expect(notice).to_contain_text("is cancelled. Your seat went to the next person on the waiting list")
    expect(notice).to_be_focused()
    expect(page.locator("#announcer")).to_contain_text("is cancelled")
    assert selectors.registration_list(user_id=user_key(student)) == []

    # Now waiting behind someone else's seat, on an event of the same name: the student's only registration.
    waiting_for = event_services.event_create(title=event.title, starts_at=event.starts_at, capacity=1,
                                              created_by="staff")
    register(waiting_for.event_id, "first-in")
    register(waiting_for.event_id, user_key(student))
    page.goto(f"{app_server}/me/registrations/")
    page.get_by_role("link", name="Leave the waiting list…").click()
    expect(page.locator(".cancel-question")).to_contain_text("You are number 1 on the waiting list")
    page.get_by_role("button", name="Yes, leave the waiting list").click()
    row = page.locator(".registration-row")
    expect(row).to_contain_text("You left the waiting list for “Cancel club”.")
    expect(row).not_to_contain_text("registration for")
    expect(page.locator("#announcer")).to_have_text("You left the waiting list for “Cancel club”.")


def test_cancel_without_javascript_is_a_confirmation_page(app_server, browser, contexts, event, student):
    register(event.event_id, user_key(student))
    page = new_sized_page(browser, DESKTOP, contexts, java_script_enabled=False)
    log_in_as(page, app_server, student)
    page.goto(f"{app_server}/me/registrations/")
    page.get_by_role("link", name="Cancel registration…").click()
    page.wait_for_url(f"{app_server}/registrations/**/cancel/?from=list")
    expect(page.get_by_role("heading", name="Cancel your registration?")).to_be_visible()
    page.get_by_role("button", name="Yes, cancel my registration").click()
    page.wait_for_url(f"{app_server}/me/registrations/")
    expect(page.locator(".messages")).to_contain_text("Your registration for “Cancel club” is cancelled.")
    assert selectors.registration_list(user_id=user_key(student)) == []


def test_back_after_registering_shows_the_registration_not_a_stale_register_button(app_server, browser, contexts,
                                                                                  event, student):
    page = new_sized_page(browser, DESKTOP, contexts)
    log_in_as(page, app_server, student)
    response = page.goto(f"{app_server}/events/{event.event_id}/")
    assert "no-store" in response.headers["cache-control"]
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".panel-notice")).to_contain_text("You are registered")
    page.get_by_role("link", name="My registrations").click()
    page.wait_for_url(f"{app_server}/me/registrations/")
    page.go_back()
    page.wait_for_url(f"{app_server}/events/{event.event_id}/")
    expect(page.locator(".reg-status")).to_contain_text("Confirmed")
    expect(page.get_by_role("button", name="Register")).to_have_count(0)
    assert page.evaluate("htmx.config.historyCacheSize") == 0
