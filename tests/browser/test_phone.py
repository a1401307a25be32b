"""Every page fits a phone: at 320 and 390 px wide no page scrolls sideways, the closed menu is one row of at
most 64 px, and every link, button and field of the main content is a target of at least 24 by 24 px
(WCAG 2.2, 2.5.8), save links inside a sentence, which that criterion exempts. The same walk scans each kind of
page with axe-core at a phone's width and a desktop's: no serious or critical WCAG 2.2 AA violation."""

from collections.abc import Collection
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from inventory import services as inventory_services
from registrations import services
from registrations.events import services as event_services
from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import Question
from tems.clock import utcnow
from tems.identity import user_key
from tems.models import Membership, Team
from tems.permissions import DOOR_VOLUNTEER
from tests.browser.helpers import log_in_as
from tests.browser.pages import new_sized_page, serious_axe_violations_at_both_widths
from tests.registrations.helpers import register

pytestmark = pytest.mark.browser

WIDTHS = (320, 390)
CLOSED_MENU_MAX_PX = 64
TARGET_MIN_PX = 24

# What one look at a page measures: the sideways scroll, the header's height and the targets that are too small.
MEASURE = """(minimum) => {
  const small = [];
  const shown = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const inSentence = (el) => {
    // WCAG's inline exception: a link sized by the line of text it sits in, among other words.
    if (el.tagName !== "A" || getComputedStyle(el).display !== "inline") return false;
    let block = el.parentElement;
    while (block && getComputedStyle(block).display === "inline") block = block.parentElement;
    return block && block.textContent.trim().length > el.textContent.trim().length;
  };
  for (const el of document.querySelectorAll(
      "main a[href], main button, main input:not([type=hidden]), main select, main textarea, main summary")) {
    // A visually hidden file input is reached through its label, which is the target (the door's photo scan).
    if (!shown(el) || el.closest(".visually-hidden") || el.classList.contains("visually-hidden")) continue;
    const r = el.getBoundingClientRect();
    if ((r.width < minimum || r.height < minimum) && !inSentence(el)) {
      small.push(`${el.tagName.toLowerCase()} "${(el.textContent || el.name || "").trim().slice(0, 30)}" `
                 + `${Math.round(r.width)}x${Math.round(r.height)}`);
    }
  }
  return {scroll: document.documentElement.scrollWidth, width: window.innerWidth,
          header: document.querySelector(".site-header").getBoundingClientRect().height, small};
}"""


def _problems(page: Page, base_url: str, paths: list[str], *, scanned: Collection[str] = ()) -> dict[str, list[str]]:
    """Each path at each width: what does not fit (nothing, for a page that fits); and for the ``scanned`` paths,
    axe-core's serious and critical violations on a phone and on a desktop."""
    assert set(scanned) <= set(paths), set(scanned) - set(paths)  # a scan never skipped for a mistyped path
    found: dict[str, list[str]] = {}
    for path in paths:
        # Loaded once and measured at each width: the layout follows a resize as it follows a load at that width
        # (the pages' CSS decides it; no script reads the width).
        page.set_viewport_size({"width": WIDTHS[0], "height": 800})
        response = page.goto(f"{base_url}{path}")
        assert response.status < 500, (path, response.status)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 800})
            seen = page.evaluate(MEASURE, TARGET_MIN_PX)
            problems = []
            if seen["scroll"] > seen["width"]:
                problems.append(f"scrolls sideways: {seen['scroll']} px on {seen['width']} px")
            if seen["header"] > CLOSED_MENU_MAX_PX:
                problems.append(f"header {seen['header']:.0f} px tall")
            problems += [f"small target {target}" for target in seen["small"]]
            if problems:
                found[f"{width} px {path}"] = problems
        if path in scanned and (violations := serious_axe_violations_at_both_widths(page)):
            found[f"axe {path}"] = violations
    return found


@pytest.fixture
def demo_mode(settings):
    settings.TEMS_DEMO = True  # the lab is in the menu and open to students only in demo mode


def test_every_page_fits_a_phone_and_has_no_serious_axe_violation(app_server, browser, contexts, demo_mode,
                                                                    student, staff_user):
    question_sets.known.reset()
    soon = utcnow() + timedelta(days=30)
    seated = event_services.event_create(title="A very long event title that keeps going for the whole of the line",
                                         starts_at=soon, capacity=5, created_by="staff", location="Main hall, room 101",
                                   description="Bring a friend.", team="chem")
    full = event_services.event_create(title="Full house", starts_at=soon, capacity=1, created_by="staff")
    offered = event_services.event_create(title="Offer club", starts_at=soon, capacity=1, created_by="staff",
                                    offer_hours=24)
    asked = event_services.event_create(title="Question night", starts_at=soon, capacity=5, created_by="staff")
    question_services.questions_update(event_id=asked.event_id, expected_version=0, updated_by="staff", questions=[
        Question(id="0a0b0c0d", label="Diet", kind="single", choices=("none", "vegan"), required=True),
        Question(id="1a1b1c1d", label="Workshops", kind="multiple", choices=("morning", "afternoon")),
        Question(id="2a2b2c2d", label="Anything we should know?", kind="text")])
    doomed = event_services.event_create(title="Cancelled gala", starts_at=soon, capacity=5, created_by="staff")
    left = event_services.event_create(title="Left behind", starts_at=soon, capacity=5, created_by="staff")
    past = event_services.event_create(title="Last year's fair", starts_at=datetime(2020, 5, 1, 18, tzinfo=UTC),
                                 capacity=5, created_by="staff")
    me = user_key(student)
    mine = register(seated.event_id, me, user_name="student1").data["registration_id"]
    register(full.event_id, "someone-else", user_name="someone1")
    register(full.event_id, me, user_name="student1")
    holder = register(offered.event_id, "holder", user_name="holder1").data["registration_id"]
    register(offered.event_id, me, user_name="student1")
    services.registration_cancel(user_id="holder", registration_id=holder)
    register(doomed.event_id, me, user_name="student1")
    gone = register(left.event_id, me, user_name="student1").data["registration_id"]
    services.registration_cancel(user_id=me, registration_id=gone)
    inventory_services.item_create(sku="MUG-1", name="Mug with a rather long name", quantity=4, actor="staff",
                                   location="Store room A")
    inventory_services.item_adjust(sku="MUG-1", delta=-1, reason="sold at the welcome fair", actor="staff")

    staff = new_sized_page(browser, {"width": 390, "height": 800}, contexts)
    log_in_as(staff, app_server, User.objects.get(username="staffer"))
    # Through the pages, so the messages page lists a sent message and one event is cancelled.
    staff.goto(f"{app_server}/events/{seated.event_id}/messages/")
    staff.get_by_label("Subject").fill("Room change")
    staff.get_by_label("Message").fill("We moved to the big hall.")
    staff.get_by_role("button", name="Preview").click()
    staff.get_by_role("button", name="Send to 1").click()
    expect(staff.locator(".sent-messages")).to_contain_text("Room change")
    staff.goto(f"{app_server}/events/{doomed.event_id}/cancel/")
    staff.get_by_role("button", name="Cancel the event and tell 1").click()
    expect(staff.locator(".event-cancelled")).to_be_visible()

    anonymous = new_sized_page(browser, {"width": 390, "height": 800}, contexts)
    anonymous_paths = ["/accounts/login/", "/accounts/signup/", "/no/such/page/"]
    found = _problems(anonymous, app_server, anonymous_paths, scanned=anonymous_paths)

    student_page = new_sized_page(browser, {"width": 390, "height": 800}, contexts)
    log_in_as(student_page, app_server, User.objects.get(username="student1"))
    # Scanned with axe-core: one page of each kind (an event with a seat, one with a place in line, ...).
    student_scanned = ["/events/", f"/events/{seated.event_id}/", f"/events/{full.event_id}/", "/me/registrations/",
                       f"/registrations/{mine}/cancel/?from=list", "/accounts/", "/accounts/verify-email/",
                       "/me/data/", "/inventory/"]
    found |= _problems(student_page, app_server, [
        "/events/", "/events/past/", f"/events/{seated.event_id}/", f"/events/{full.event_id}/",
        f"/events/{offered.event_id}/", f"/events/{asked.event_id}/", f"/events/{doomed.event_id}/",
        f"/events/{left.event_id}/", f"/events/{past.event_id}/", "/me/registrations/",
        f"/registrations/{mine}/cancel/?from=list", "/accounts/", "/accounts/verify-email/", "/me/data/",
        "/tickets/not-a-ticket/", "/lab/", "/inventory/"], scanned=student_scanned)

    team = Team.objects.create(id="chem", name="Chemistry Society")
    Membership.objects.create(user=User.objects.create_user("door1", first_name="Dee"), team=team, role=DOOR_VOLUNTEER)
    staff_paths = ["/teams/", "/teams/chem/", "/events/", "/events/new/", "/idempotency-key/", "/inventory/",
                   "/inventory/new/",
                   "/inventory/MUG-1/", "/inventory/MUG-1/edit/", "/inventory/MUG-1/history/", "/inventory/import/",
                   "/diagnostics/write-metrics/", "/lab/"]
    for event in (seated, doomed):
        staff_paths += [f"/events/{event.event_id}/{page}" for page in
                        ("", "edit/", "attendees/", "messages/", "questions/", "cancel/", "door/", "retention/",
                         "report/", "copy/", "doors/")]
    staff_paths.append(f"/events/{asked.event_id}/questions/")
    staff_scanned = [f"/events/{seated.event_id}/{page}" for page in
                     ("", "edit/", "door/", "attendees/", "messages/", "questions/", "cancel/", "retention/",
                      "report/", "copy/")]
    staff_scanned += ["/events/new/", "/inventory/", "/inventory/new/", "/inventory/MUG-1/", "/inventory/MUG-1/edit/",
                      "/inventory/MUG-1/history/", "/inventory/import/", "/diagnostics/write-metrics/", "/lab/"]
    found |= _problems(staff, app_server, staff_paths, scanned=staff_scanned)

    assert found == {}, "\n".join(f"{where}: {'; '.join(problems)}" for where, problems in found.items())


def test_the_phone_menu_opens_without_javascript_and_its_links_are_thumb_sized(app_server, browser, contexts,
                                                                              demo_mode, staff_user):
    page = new_sized_page(browser, {"width": 320, "height": 700}, contexts, java_script_enabled=False)
    log_in_as(page, app_server, User.objects.get(username="staffer"))
    page.goto(f"{app_server}/events/")
    menu = page.get_by_role("navigation", name="Main")
    expect(menu.get_by_role("link", name="Inventory")).to_be_hidden()
    page.locator(".menu-button").click()
    links = menu.locator("a, button")
    expect(links.first).to_be_visible()
    assert [links.nth(n).inner_text() for n in range(links.count())] == [
        "Events", "My registrations", "Account", "New event", "Drafts", "Inventory", "Teams", "Lab", "Log out"]
    for n in range(links.count()):
        box = links.nth(n).bounding_box()
        assert box["height"] >= 44 and box["width"] >= 24, (links.nth(n).inner_text(), box)
    # Open, the menu lies over the page: still nothing to scroll sideways.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    menu.get_by_role("link", name="Inventory").click()
    page.wait_for_url(f"{app_server}/inventory/")


def test_a_wide_screen_shows_the_links_in_a_row_without_a_menu_button(app_server, browser, contexts, student):
    page = new_sized_page(browser, {"width": 1200, "height": 800}, contexts)
    log_in_as(page, app_server, User.objects.get(username="student1"))
    page.goto(f"{app_server}/events/")
    expect(page.locator(".menu-button")).to_be_hidden()
    menu = page.get_by_role("navigation", name="Main")
    expect(menu.get_by_role("link", name="My registrations")).to_be_visible()
    expect(menu.get_by_role("link", name="Lab")).to_have_count(0)  # not in demo mode: no lab for students
    assert page.locator(".site-header").bounding_box()["height"] <= CLOSED_MENU_MAX_PX
