"""The strict Content-Security-Policy in Chromium: the pages and their htmx swaps work, and nothing is blocked."""

from datetime import UTC, datetime

from playwright.sync_api import expect

from registrations.events import services as event_services
from tests.browser.helpers import log_in


def test_pages_and_htmx_swaps_run_under_the_policy_with_nothing_blocked(app_server, new_page, staff_user):
    event = event_services.event_create(title="Policy fair", starts_at=datetime(2030, 3, 1, 12, tzinfo=UTC),
                                        capacity=10, created_by="staff")
    page = new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.on("pageerror", lambda error: console.append(str(error)))

    log_in(page, app_server, "staffer", "pw-staff-1")
    assert "script-src 'self'" in page.request.get(f"{app_server}/events/").headers["content-security-policy"]
    page.goto(f"{app_server}/events/{event.event_id}/")
    page.get_by_role("button", name="Register").click()
    expect(page.get_by_text("1 / 10 seats taken")).to_be_visible()
    for path in ("/me/registrations/", "/inventory/", "/lab/", "/accounts/verify-email/"):
        page.goto(f"{app_server}{path}")
    page.goto(f"{app_server}/lab/")
    race = page.locator("#registration-race")
    race.get_by_label("Taps", exact=True).fill("2")
    race.get_by_role("button", name="Fire").click()
    expect(page.locator("#registration-race .verdict")).to_contain_text("2 taps:", timeout=30_000)  # the swap came back
    blocked = [text for text in console if "Content Security Policy" in text or "Refused to" in text]
    assert blocked == []
