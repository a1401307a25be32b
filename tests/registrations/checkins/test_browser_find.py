"""The door without a QR code, in Chromium on a phone (DynamoDB Local): a typed short code, a tap on a name racing a
scan at another door, an offline search with a queued tap synced once, and axe on the page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations.checkins import api, selectors
from registrations.checkins.services import CheckInOutcome
from registrations.ticket_tokens import short_code
from tems.idempotency import StoredResponse
from tems.identity import user_key
from tests.browser.helpers import signed_in
from tests.browser.pages import axe_violations, fits_the_width
from tests.race import WindowHeldOpen
from tests.registrations.checkins.helpers import naive_checkin
from tests.registrations.helpers import make_event, register

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
BROKEN = "a read-then-write check-in admits the student twice"


@pytest.fixture
def doors(ddb, browser, live_server, transactional_db):
    """Open the door page of an event as a logged-in doorkeeper, on a phone: ``open_door(event, door_name)``."""
    staff = User.objects.create_user("staff2", "staff2@uni.test", "pw-staff-2", is_staff=True)
    contexts = []

    def open_door(event, name: str, context=None):
        if context is None:
            context = signed_in(browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, timezone_id="UTC"),
                                live_server.url, staff)
            contexts.append(context)
        page = context.new_page()
        page.goto(f"{live_server.url}/events/{event.event_id}/door/")
        page.locator("#door-name").fill(name)
        page.locator("#door-name").dispatch_event("change")
        return page, context

    yield open_door
    for context in contexts:
        context.close()


@pytest.fixture
def read_then_write(monkeypatch):
    """Swap the door's check-in for the deliberately broken one (read "checked in?", then write), its race window
    held open until the second door is inside it."""
    window = WindowHeldOpen()

    def broken(**kwargs):
        body = naive_checkin(window=window, **kwargs)
        status = 201 if body["status"] == "checked_in" else 200
        return CheckInOutcome(StoredResponse.json({**body, "user": "?"}, status=status), body["status"])

    monkeypatch.setattr(api.services, "checkin_create", broken)


def person(username: str, first: str, last: str) -> str:
    return user_key(User.objects.create_user(username, f"{username}@uni.test", "pw", first_name=first, last_name=last))


def search(page, text: str) -> None:
    page.get_by_label("Name, username or code").fill(text)
    page.get_by_role("button", name="Search", exact=True).click()


def screen(page, timeout: float = 90_000):
    # Generous: a broken variant's race window waits up to a minute for the second door on a loaded machine.
    feedback = page.locator("#feedback")
    feedback.wait_for(state="visible", timeout=timeout)
    return feedback


def test_a_typed_code_admits_and_a_mistyped_one_is_refused_in_plain_words(doors):
    event = make_event(capacity=5, title="Code night")
    code = short_code(register(event.event_id, "ann").data["registration_id"])
    page, _ = doors(event, "A")

    wrong = code[:-1] + ("0" if code[-1] != "0" else "1")
    page.locator("#ticket-code").fill(wrong)
    page.get_by_role("button", name="Check in", exact=True).click()
    refused = screen(page)
    expect(refused).to_have_class(re.compile(r"\brefused\b"))
    expect(refused.locator(".door-feedback-detail")).to_contain_text(
        f"No registration with a seat at this event has the code {wrong}")
    expect(refused).not_to_contain_text("genuine")
    refused.click()

    page.locator("#ticket-code").fill(f"{code[:4]} {code[4:8]} {code[8:]}")
    page.get_by_role("button", name="Check in", exact=True).click()
    admitted = screen(page)
    expect(admitted).to_have_class(re.compile(r"\bok\b"))
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 1


@pytest.mark.parametrize("broken", [False, pytest.param(True, marks=pytest.mark.xfail(strict=True, reason=BROKEN))])
def test_a_scan_at_one_door_and_a_tap_on_the_name_at_another_admit_once(doors, request, broken):
    if broken:
        request.getfixturevalue("read_then_write")
    event = make_event(capacity=5, title="Two doors")
    ticket = register(event.event_id, person("asmith", "Ann", "Smith"), user_name="asmith").data["ticket_url"]
    door_a, _ = doors(event, "A")
    door_b, _ = doors(event, "B")
    door_a.locator("#ticket-code").fill(ticket)
    search(door_b, "ann smi")
    tap = door_b.get_by_role("button", name="Check in Ann Smith")
    expect(tap).to_be_visible()

    # Both doorkeepers tap within the same moment; each request is sent before either answer comes back.
    door_a.get_by_role("button", name="Check in", exact=True).dispatch_event("click")
    tap.dispatch_event("click")
    screens = [screen(door_a), screen(door_b)]
    kinds = sorted(s.get_attribute("data-kind") for s in screens)
    assert kinds == ["already", "ok"], kinds
    [first] = selectors.checkin_list(event_id=event.event_id)
    told = next(s for s in screens if s.get_attribute("data-kind") == "already")
    expect(told.locator(".door-feedback-detail")).to_have_text(
        f"Already checked in at {first.checked_in_at:%H:%M} at door {first.door} by staff2")
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 1


@pytest.mark.parametrize("broken", [False, pytest.param(True, marks=pytest.mark.xfail(strict=True, reason=BROKEN))])
def test_offline_the_door_searches_its_kept_list_and_a_queued_tap_is_synced_once(doors, request, broken):
    """Two tabs of the same door share the queue: when the network returns both send the queued tap at once, with
    its one key. Against a check-in that reads then writes, both sends admit."""
    if broken:
        request.getfixturevalue("read_then_write")
    event = make_event(capacity=5, title="Offline fair")
    register(event.event_id, person("bking", "Bea", "King"), user_name="bking")
    register(event.event_id, person("asmith", "Ann", "Smith"), user_name="asmith")
    page, context = doors(event, "A")
    expect(page.locator("#list-note")).to_contain_text("2 people kept on this phone")
    page.wait_for_function("navigator.serviceWorker && navigator.serviceWorker.controller !== null")
    other_tab, _ = doors(event, "A", context=context)
    expect(other_tab.locator("#list-note")).to_contain_text("2 people kept on this phone")
    # The doorkeeper works in the first tab: in front, as a tab someone taps is. A tab behind another gets no
    # animation frames, and every click on it waits seconds to see its target settle.
    page.bring_to_front()

    context.set_offline(True)
    search(page, "smith")
    result = page.locator("#find-results li")
    expect(result).to_have_count(1)
    expect(result).to_contain_text("Ann Smith")
    expect(result).to_contain_text("Confirmed, not checked in")
    expect(page.locator("#find-note")).to_contain_text("Offline: searched the list kept on this phone")
    page.get_by_role("button", name="Check in Ann Smith").click()
    expect(screen(page)).to_contain_text("provisional")
    page.locator("#feedback").click()
    expect(result).to_contain_text("Check-in queued")
    expect(page.locator("#scans li[data-state=pending]")).to_have_count(1)
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 0

    context.set_offline(False)
    for tab in (page, other_tab):
        tab.evaluate("window.dispatchEvent(new Event('online'))")
    expect(page.locator("#scans li[data-state=done]")).to_have_count(1, timeout=90_000)
    expect(other_tab.locator("#scans li[data-state=done]")).to_have_count(1, timeout=90_000)
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 1
    expect(page.locator("#scans li .scan-state")).to_have_text(["Checked in"])
    expect(result).to_contain_text(re.compile(r"Checked in at \d\d:\d\d at door A by staff2"))
    assert [entry.action for entry in selectors.checkin_history(event_id=event.event_id)] == ["checked_in"]


def test_a_tap_the_queue_is_already_sending_still_shows_its_feedback(doors):
    """Offline, the network's return is announced in the same moment as a tap: the flush it starts picks the new
    scan up before the tap's own send. One of the two sends it; the tap's feedback must show either way."""
    event = make_event(capacity=5, title="Flush fair")
    register(event.event_id, person("asmith", "Ann", "Smith"), user_name="asmith")
    page, context = doors(event, "A")
    expect(page.locator("#list-note")).to_contain_text("1 person kept on this phone")
    context.set_offline(True)
    search(page, "smith")
    expect(page.locator("#find-results li")).to_have_count(1)
    page.evaluate("""() => {
        document.querySelector('[aria-label="Check in Ann Smith"]').click();
        window.dispatchEvent(new Event("online"));  // still offline: the flush's send fails too
    }""")
    expect(screen(page, timeout=15_000)).to_contain_text("provisional")
    expect(page.locator("#scans li[data-state=pending]")).to_have_count(1)


def test_the_door_with_search_results_fits_a_phone_and_has_no_axe_violation(doors):
    event = make_event(capacity=1, title="Axe door")
    register(event.event_id, person("asmith", "Ann", "Smith"), user_name="asmith")
    register(event.event_id, person("amiller", "Amy", "Miller"), user_name="amiller")  # waitlisted
    page, _ = doors(event, "A")
    search(page, "a")
    expect(page.locator("#find-results li")).to_have_count(2)
    assert axe_violations(page) == []
    assert fits_the_width(page)
    # A search the server refuses is said in words, never an error page.
    search(page, "x" * 100 + "\u0007")
    expect(page.locator("#find-note")).to_contain_text(re.compile(r"\S"))
