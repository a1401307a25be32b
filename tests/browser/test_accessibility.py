"""A swap moves focus to its result and announces it; focus ring, input borders and phone targets are big enough.
(The walk through every kind of page with axe-core, at a phone's width and a desktop's, is
tests/browser/test_phone.py's, over the same pages it measures.)"""

from datetime import UTC, datetime

from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations.events import services as event_services
from tests.browser.helpers import log_in_as
from tests.browser.pages import (
    DESKTOP,
    PHONE,
    new_sized_page,
    serious_axe_violations,
)


def _contrast(page, foreground: str, background: str) -> float:
    return page.evaluate(
        """([a, b]) => {
             const lum = (css) => {
               const [r, g, b] = css.match(/[\\d.]+/g).slice(0, 3).map(Number).map((c) => {
                 c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); });
               return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
             const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
             return (x + 0.05) / (y + 0.05); }""",
        [foreground, background],
    )


def test_registering_moves_focus_to_the_result_and_announces_it(app_server, browser, contexts, student):
    event = event_services.event_create(title="Focus fair", starts_at=datetime(2030, 5, 3, 18, tzinfo=UTC), capacity=5,
                                  created_by="staff")
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, User.objects.get(username="student1"))
    page.goto(f"{app_server}/events/{event.event_id}/")
    page.get_by_role("button", name="Register").focus()
    page.keyboard.press("Enter")
    notice = page.locator(".panel-notice")
    expect(notice).to_contain_text("You are registered for “Focus fair”.")
    expect(notice).to_be_focused()
    # The live region is outside the swapped panel, so it is the same node before and after: it gets announced.
    announcer = page.locator("#announcer")
    expect(announcer).to_have_text("You are registered for “Focus fair”.")
    assert page.locator("#registration-panel #announcer").count() == 0
    assert announcer.get_attribute("role") == "status"


def test_focus_ring_and_input_borders_have_three_to_one_contrast(app_server, browser, contexts, staff_user):
    page = new_sized_page(browser, DESKTOP, contexts)
    log_in_as(page, app_server, User.objects.get(username="staffer"))
    page.goto(f"{app_server}/events/new/")
    title = page.get_by_label("Title")
    border = title.evaluate("e => getComputedStyle(e).borderTopColor")
    assert _contrast(page, border, "rgb(255, 255, 255)") >= 3
    title.focus()
    ring = title.evaluate("e => getComputedStyle(e).outlineColor")
    assert _contrast(page, ring, "rgb(255, 255, 255)") >= 3
    page.keyboard.press("Shift+Tab")  # back into the page: a link or button gets the keyboard focus ring
    page.goto(f"{app_server}/events/")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # past the skip link to the brand link in the blue header
    focused = page.evaluate("""() => { const s = getComputedStyle(document.activeElement);
                                       return [s.outlineStyle, s.outlineColor]; }""")
    header = page.locator(".site-header").evaluate("e => getComputedStyle(e).backgroundColor")
    assert focused[0] != "none" and _contrast(page, focused[1], header) >= 3


def test_phone_nav_links_are_44_px_tall_targets(app_server, browser, contexts, staff_user):
    # WCAG 2.2 AA's floor is 24 px, which the links just met as bare text with neighbours closer than 24 px;
    # a thumb on a phone needs the 44 px of 2.5.5, which the stylesheet gives them, the Menu button too.
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, User.objects.get(username="staffer"))
    page.goto(f"{app_server}/events/")
    button = page.locator(".menu-button")
    assert button.bounding_box()["height"] >= 44
    button.click()
    assert serious_axe_violations(page) == []  # the open menu too
    targets = page.locator(".site-header nav a, .site-header nav button")
    assert targets.count() >= 5
    for n in range(targets.count()):
        box = targets.nth(n).bounding_box()
        assert box["height"] >= 44 and box["width"] >= 24, (targets.nth(n).inner_text(), box)
