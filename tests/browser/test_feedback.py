"""A tap in Chromium at the edges: an expired session, a failed or unreachable server, a stale CSRF token,
the busy state while the answer is on its way. Nothing is silent and nothing is applied twice."""

import functools
import re
from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from registrations import selectors
from registrations.events import services as event_services
from tems.identity import user_key
from tests.browser.helpers import log_in, log_in_as
from tests.browser.pages import DESKTOP, PHONE, new_sized_page


def _edge_event():
    return event_services.event_create(title="Edge night", starts_at=datetime(2030, 6, 1, 18, tzinfo=UTC), capacity=50,
                                       created_by="staff")


@pytest.fixture
def event(app_server):
    return _edge_event()


def _student_on_event_page(browser, contexts, app_server, event, student, viewport=DESKTOP):
    page = new_sized_page(browser, viewport, contexts)
    log_in_as(page, app_server, student)
    page.goto(f"{app_server}/events/{event.event_id}/")
    return page


def test_expired_session_sends_the_whole_page_to_log_in_and_back_to_the_event(app_server, browser, contexts, event,
                                                                              student):
    page = _student_on_event_page(browser, contexts, app_server, event, student, PHONE)
    page.context.clear_cookies(name="sessionid")  # the session expired while the page stayed open
    page.get_by_role("button", name="Register").click()
    page.wait_for_url(f"{app_server}/accounts/login/?next=%2Fevents%2F{event.event_id}%2F")
    expect(page.locator("header.site-header")).to_have_count(1)  # a whole page, not a login page inside the card
    page.get_by_label("Username").fill("student1")
    page.get_by_label("Password").fill("pw-student-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{app_server}/events/{event.event_id}/")  # the page, not the register POST URL's 405
    expect(page.get_by_role("button", name="Register")).to_be_visible()


def _fail(route, *, status: int) -> None:
    route.fulfill(status=status, body="<h1>Bad gateway</h1>")


def test_a_failed_answer_shows_a_dismissible_error_and_the_next_success_clears_it(app_server, browser, contexts,
                                                                                 student):
    page = new_sized_page(browser, DESKTOP, contexts)
    log_in_as(page, app_server, student)
    # One event per status, each tapped from a freshly loaded page: the last tap of each registers the student.
    for status in (500, 502, 503):
        event = _edge_event()
        page.goto(f"{app_server}/events/{event.event_id}/")
        register_url = f"**/events/{event.event_id}/register/"
        page.route(register_url, functools.partial(_fail, status=status))
        page.get_by_role("button", name="Register").click()
        alert = page.locator("#alerts .alert")
        expect(alert).to_contain_text(f"error {status}")
        expect(alert).to_contain_text(re.compile("tap again", re.IGNORECASE))
        expect(page.get_by_role("button", name="Register")).to_be_enabled()
        page.get_by_role("button", name="Dismiss").click()
        expect(alert).to_have_count(0)

        page.get_by_role("button", name="Register").click()
        expect(alert).to_have_count(1)
        page.unroute(register_url)
        page.get_by_role("button", name="Register").click()
        expect(page.locator(".panel-notice")).to_contain_text("You are registered")
        expect(alert).to_have_count(0)


def test_could_not_reach_tems_is_an_error_after_one_same_key_retry(app_server, browser, contexts, event, student):
    page = _student_on_event_page(browser, contexts, app_server, event, student)
    register_url = f"**/events/{event.event_id}/register/"
    keys: list[str] = []

    def offline(route):
        keys.append(route.request.headers["idempotency-key"])
        route.abort("internetdisconnected")

    page.route(register_url, offline)
    page.get_by_role("button", name="Register").click()
    alert = page.locator("#alerts .alert")
    expect(alert).to_contain_text("We could not reach TEMS.")
    assert alert.evaluate("e => getComputedStyle(e).borderTopColor") == "rgb(179, 38, 30)"  # styled as an error
    assert len(keys) == 2 and keys[0] == keys[1]  # the automatic retry is the same tap
    page.unroute(register_url)
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".panel-notice")).to_contain_text("You are registered")
    expect(alert).to_have_count(0)


def test_stale_csrf_token_is_refreshed_and_the_tap_retried_with_the_same_key(app_server, browser, contexts, event,
                                                                            student):
    page = _student_on_event_page(browser, contexts, app_server, event, student)
    other_tab = page.context.new_page()
    log_in(other_tab, app_server, "student1", "pw-student-1")  # a new log-in rotates the CSRF token
    answers: list[tuple[int, str]] = []
    page.on("response", lambda response: answers.append(
        (response.status, response.request.headers.get("idempotency-key"))) if "/register/" in response.url else None)
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".panel-notice")).to_contain_text("You are registered")
    assert [status for status, _ in answers] == [403, 200]
    assert answers[0][1] == answers[1][1]
    expect(page.locator("#alerts .alert")).to_have_count(0)
    assert len(selectors.registration_list(user_id=user_key(student))) == 1


def test_register_button_says_registering_and_announces_it_while_in_flight(app_server, browser, contexts, event,
                                                                           student):
    page = _student_on_event_page(browser, contexts, app_server, event, student, PHONE)
    held: list = []
    page.route(f"**/events/{event.event_id}/register/", lambda route: held.append(route))
    page.get_by_role("button", name="Register").click()
    button = page.locator(".register-form button[type=submit]")
    expect(button).to_be_disabled()
    expect(button).to_have_accessible_name("Registering…")
    expect(button.locator(".busy-label")).to_be_visible()
    expect(button.locator(".idle-label")).to_be_hidden()
    expect(page.locator(".register-form [role=status]")).to_have_text("Registering…")
    held[0].continue_()
    expect(page.locator(".panel-notice")).to_contain_text("You are registered")


def test_idempotency_script_leaves_busy_states_to_htmx():
    from pathlib import Path

    script = (Path(__file__).resolve().parents[2] / "static" / "js" / "tems-idempotency.js").read_text()
    assert "setBusy" not in script and ".disabled" not in script
