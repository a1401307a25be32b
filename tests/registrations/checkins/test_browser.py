"""The door page in Chromium on a phone's viewport (DynamoDB Local): QR photo, the three screens, the offline queue."""

from __future__ import annotations

import io
import re
import uuid
from datetime import UTC

import pytest
import segno
from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations.checkins import selectors, services
from tests.browser.helpers import signed_in
from tests.helpers import CHROMIUM
from tests.registrations.helpers import make_event, register

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
# Resolves true once the door page and every script it lists are in its service worker's cache (tems-door.js
# fills it), false if they are not there within the timeout. Run by page.evaluate, which awaits the promise
# (page.wait_for_function does not: it would take the pending promise for a truthy answer).
DOOR_PAGE_CACHED = """async (timeoutMs) => {
  const wanted = [location.pathname].concat(JSON.parse(document.getElementById("door").dataset.assets));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const cache = await caches.open("tems-door");
    const found = await Promise.all(wanted.map((url) => cache.match(url)));
    if (found.every(Boolean)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}"""


@pytest.fixture
def door(ddb, browser, live_server, transactional_db):
    """Open an event's door page as a logged-in doorkeeper on a phone-sized screen; returns (page, context)."""
    staff = User.objects.create_user("staff2", "staff2@uni.test", "pw-staff-2", is_staff=True)
    contexts = []

    def open_door(event):
        context = signed_in(browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, timezone_id="UTC"),
                            live_server.url, staff)
        contexts.append(context)
        page = context.new_page()
        page.goto(f"{live_server.url}/events/{event.event_id}/door/")
        page.locator("#door-name").fill("B")
        page.locator("#door-name").dispatch_event("change")
        return page, context

    yield open_door
    for context in contexts:
        context.close()


def qr_png(text: str) -> bytes:
    buffer = io.BytesIO()
    segno.make(text, error="m").save(buffer, kind="png", scale=8, border=4)
    return buffer.getvalue()


def type_ticket(page, ticket: str) -> None:
    page.locator("#ticket-code").fill(ticket)
    page.get_by_role("button", name="Check in", exact=True).click()


def feedback(page, kind: str):
    screen = page.locator(f"#feedback.{kind}")
    screen.wait_for(state="visible")
    return screen


def test_a_qr_photo_checks_in_green_then_red_then_yellow(door):
    event = make_event(capacity=1, title="Gala")
    ticket = register(event.event_id, "ann").data["ticket_url"]
    waitlisted = register(event.event_id, "bob").data["ticket_url"]
    page, _ = door(event)
    # Each answer is also felt: record the vibration patterns the page asks for (one per kind of answer).
    page.evaluate("""() => {
        navigator.vibrate = (pattern) => { (window.__buzz = window.__buzz || []).push(pattern); return true; };
    }""")

    page.locator("#photo").set_input_files({"name": "ticket.png", "mimeType": "image/png", "buffer": qr_png(ticket)})
    green = feedback(page, "ok")
    assert green.locator(".door-feedback-title").inner_text() == "Checked in"
    assert green.locator(".door-feedback-detail").inner_text() == "ann"
    page.locator("#checked-in-count").filter(has_text="1").wait_for()
    assert page.locator("#confirmed-count").inner_text() == "1"
    green.click()

    first = selectors.checkin_list(event_id=event.event_id)[0]
    assert (first.door, first.checked_in_by) == ("B", "staff2")
    type_ticket(page, ticket)
    red = feedback(page, "already")
    expected = f"Already checked in at {first.checked_in_at.astimezone(UTC):%H:%M} at door B by staff2"
    assert red.locator(".door-feedback-detail").inner_text() == expected
    red.click()

    type_ticket(page, waitlisted)
    yellow = feedback(page, "refused")
    assert yellow.locator(".door-feedback-title").inner_text() == "Not admissible"
    assert "waiting list" in yellow.locator(".door-feedback-detail").inner_text()
    yellow.click()

    type_ticket(page, "not-a-ticket")
    assert "could not be read" in feedback(page, "refused").locator(".door-feedback-detail").inner_text()
    assert selectors.checkin_stats(event_id=event.event_id) == {"confirmed": 1, "checked_in": 1}
    assert page.evaluate("window.__buzz") == [[120], [400, 100, 400], [200, 100, 200], [200, 100, 200]]

    page.locator("#feedback").click()
    # The undo asks first: dismissed, nothing changes; accepted, the check-in is taken back.
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.get_by_role("button", name="Undo check-in").click()
    page.wait_for_function("!document.querySelector('.scan-undo').disabled")
    assert asked == ["Undo the check-in of ann? They will have to be checked in again."]
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 1
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Undo check-in").click()
    page.locator("#scans li .scan-state", has_text="Undone").wait_for()
    page.locator("#checked-in-count").filter(has_text="0").wait_for()
    assert [e.action for e in selectors.checkin_history(event_id=event.event_id)] == ["checked_in", "undone"]


def test_offline_scans_are_queued_survive_a_reload_and_resolve_to_the_true_answer(door):
    event = make_event(capacity=5, title="Concert")
    tickets = [register(event.event_id, student).data["ticket_url"] for student in ("ann", "bob", "cat")]
    page, context = door(event)
    page.wait_for_function("navigator.serviceWorker && navigator.serviceWorker.controller !== null")
    # The worker controls the page as soon as it is active, but the page and its scripts are copied into its
    # cache after that: a reload offline before the copy is done has nothing to serve (seen under load).
    assert page.evaluate(DOOR_PAGE_CACHED, 30_000), "the door page never reached its service worker's cache"

    context.set_offline(True)
    for ticket in tickets:
        type_ticket(page, ticket)
        screen = feedback(page, "pending")
        expect(screen).to_contain_text("provisional")
        screen.click()
    expect(page.locator("#offline-note")).to_be_visible()
    expect(page.locator("#scans li[data-state=pending]")).to_have_count(3)

    # Meanwhile another door admits bob's ticket through the API.
    elsewhere = services.checkin_create(event_id=event.event_id, ticket_text=tickets[1], door="C", staff_id="staff3",
                                        idempotency_key=str(uuid.uuid4()), fingerprint="door C")
    assert elsewhere.response.status == 201

    page.reload()  # still offline: the service worker serves the page, IndexedDB still holds the queue
    # The list is drawn from IndexedDB after the load event: wait for it, never count at once.
    expect(page.locator("#scans li[data-state=pending]")).to_have_count(3)

    context.set_offline(False)
    page.evaluate("window.dispatchEvent(new Event('online'))")
    expect(page.locator("#scans li[data-state=done]")).to_have_count(3)
    states = page.locator("#scans li .scan-state")
    expect(states.filter(has_text=re.compile(r"^Checked in$"))).to_have_count(2)
    expect(states.filter(has_text=re.compile(r"^Already checked in$"))).to_have_count(1)
    expect(page.locator("#scans li.already .scan-detail")).to_have_text(
        re.compile(r"Already checked in at \d\d:\d\d at door C by staff3"))
    assert selectors.checkin_stats(event_id=event.event_id) == {"confirmed": 3, "checked_in": 3}
    page.locator("#checked-in-count").filter(has_text="3").wait_for()


def qr_y4m(text: str, path, *, width: int = 640, height: int = 480) -> None:
    """A two-frame Y4M video of the QR code, for Chromium's fake camera (grey levels in Y, neutral chroma)."""
    matrix = [list(row) for row in segno.make(text, error="m").matrix_iter(scale=7, border=4)]
    size = len(matrix)
    top, left = (height - size) // 2, (width - size) // 2
    luma = bytearray(b"\xeb" * (width * height))
    for y, row in enumerate(matrix):
        for x, dark in enumerate(row):
            if dark:
                luma[(top + y) * width + left + x] = 0x10
    chroma = b"\x80" * (width // 2 * height // 2)
    frame = b"FRAME\n" + bytes(luma) + chroma + chroma
    path.write_bytes(f"YUV4MPEG2 W{width} H{height} F10:1 Ip A1:1 C420jpeg\n".encode() + frame * 2)


def test_the_camera_reads_a_ticket(ddb, browser, live_server, transactional_db, tmp_path):
    """Chromium's fake camera plays a QR code video; the page finds the code in the frames and checks it in."""
    event = make_event(capacity=5, title="Camera night")
    ticket = register(event.event_id, "ann").data["ticket_url"]
    video = tmp_path / "ticket.y4m"
    qr_y4m(ticket, video)
    staff = User.objects.create_user("staff2", "staff2@uni.test", "pw-staff-2", is_staff=True)
    # A browser of its own (same Playwright instance): the fake camera is a launch flag.
    camera_browser = browser.browser_type.launch(
        executable_path=CHROMIUM,
        args=["--no-sandbox", "--disable-gpu", "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
              f"--use-file-for-fake-video-capture={video}"],
    )
    try:
        context = camera_browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, timezone_id="UTC")
        context.grant_permissions(["camera"], origin=live_server.url)
        signed_in(context, live_server.url, staff)
        page = context.new_page()
        page.goto(f"{live_server.url}/events/{event.event_id}/door/")
        page.get_by_role("button", name="Scan with camera").click()
        green = feedback(page, "ok")
        assert green.locator(".door-feedback-detail").inner_text() == "ann"
        page.wait_for_timeout(1500)  # the code stays in view: it must not be sent again as a new scan
        assert page.locator("#scans li").count() == 1
    finally:
        camera_browser.close()
    assert selectors.checkin_stats(event_id=event.event_id)["checked_in"] == 1
