"""Staff pages look finished: one primary action and the rest under "More" (a <details>, as the site's menu),
on one row, no sideways scroll, the past-start confirmation beside its words under the start, and no axe violation
on the event page, its report and its copy form. The flows run on a phone and check each page at a phone's width
and a desktop's."""

from datetime import timedelta

import pytest
from playwright.sync_api import Locator, Page, expect

from registrations.events import services as event_services
from tems.clock import utcnow
from tests.browser.helpers import log_in_as
from tests.browser.pages import (
    PHONE,
    at_both_widths,
    axe_violations_at_both_widths,
    new_sized_page,
    outside_the_screen,
    sideways_scroll,
)
from tests.registrations.helpers import register

pytestmark = pytest.mark.browser

@pytest.fixture
def event(app_server):
    made = event_services.event_create(title="A very long event title that keeps going for the whole of the line",
                                       starts_at=utcnow() + timedelta(days=3), capacity=1, created_by="staff",
                                       offer_hours=24)
    register(made.event_id, "ann", user_name="ann")
    register(made.event_id, "bo", user_name="bo")
    return made


def _not_one_row(first: Locator, second: Locator) -> list[str]:
    """The two tops, if ``second`` is not on ``first``'s row (a stack, never wanted here)."""
    tops = first.bounding_box()["y"], second.bounding_box()["y"]
    return [] if abs(tops[0] - tops[1]) < 2 else [f"not one row: tops at {tops[0]:.0f} and {tops[1]:.0f} px"]


def _past_start_confirmation_misplaced(page: Page) -> list[str]:
    """What is wrong with where the past-start confirmation sits: under the start it confirms, before the capacity;
    its box before its words, on the fields' left edge, and level with them."""
    starts, capacity = page.locator("#id_starts_at").bounding_box(), page.locator("#id_capacity").bounding_box()
    words = page.locator(".field-check label span", has_text="starts in the past").bounding_box()
    box = page.get_by_label("Yes, this event starts in the past").bounding_box()
    found = []
    if not starts["y"] < box["y"] < capacity["y"]:
        found.append(f"not between the start and the capacity: {box}")
    if not (abs(box["x"] - starts["x"]) < 2 and words["x"] > box["x"]):
        found.append(f"box not on the fields' edge before its words: {box}, {words}")
    if abs((box["y"] + box["height"] / 2) - (words["y"] + words["height"] / 2)) >= 4:
        found.append(f"box not level with its words: {box}, {words}")
    return found


def test_the_event_page_has_one_primary_action_and_a_menu_and_its_report_and_copy_form_look_finished(
        app_server, browser, contexts, staff_user, event):
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, staff_user)
    page.goto(f"{app_server}/events/{event.event_id}/")
    actions = page.locator(".page-head .page-actions")
    assert actions.locator(".button.primary").count() == 1
    edit, more = actions.get_by_role("link", name="Edit event"), actions.locator("summary")
    assert at_both_widths(page, lambda page: _not_one_row(edit, more)) == []
    expect(page.get_by_role("link", name="Report")).to_be_hidden()
    assert axe_violations_at_both_widths(page) == []
    more.click()
    # Open, the menu drops over the page (as the site's menu does), inside the screen's width.
    menu = actions.locator(".actions-menu ul")
    expect(menu.get_by_role("link", name="Report")).to_be_visible()
    assert at_both_widths(page, lambda page: outside_the_screen(page, menu)) == []
    menu.get_by_role("link", name="Report").click()
    expect(page.get_by_role("heading", name="Report")).to_be_visible()
    expect(page.locator(".report-figures")).to_contain_text("Registered")
    assert page.locator("figure.chart svg rect.chart-bar").count() == 1
    assert at_both_widths(page, sideways_scroll) + axe_violations_at_both_widths(page) == []

    page.goto(f"{app_server}/events/{event.event_id}/copy/")
    expect(page.get_by_role("heading", name="Copy event")).to_be_visible()
    expect(page.get_by_label("Title")).to_have_value(event.title)
    assert at_both_widths(page, sideways_scroll) + axe_violations_at_both_widths(page) == []
    page.get_by_label("Title").fill("Spring open day")
    page.get_by_label("Starts").fill("2020-01-01T10:00")
    page.get_by_role("button", name="Create event").click()
    confirm = page.get_by_label("Yes, this event starts in the past")
    expect(confirm).to_be_visible()
    assert at_both_widths(page, _past_start_confirmation_misplaced) == []
    assert at_both_widths(page, sideways_scroll) + axe_violations_at_both_widths(page) == []
    confirm.check()
    page.get_by_role("button", name="Create event").click()
    expect(page.get_by_role("heading", name="Spring open day")).to_be_visible()


def test_inventory_has_one_primary_action_and_no_metrics(app_server, browser, contexts, staff_user):
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, staff_user)
    page.goto(f"{app_server}/inventory/")
    actions = page.locator(".page-actions")
    assert actions.locator(".button.primary").count() == 1
    expect(page.get_by_role("link", name="Write metrics")).to_have_count(0)
    actions.locator("summary").click()
    expect(page.get_by_role("link", name="Import counts")).to_be_visible()
    assert at_both_widths(page, sideways_scroll) + axe_violations_at_both_widths(page) == []
    page.goto(f"{app_server}/accounts/")
    page.get_by_role("link", name="inventory write metrics").click()
    expect(page.get_by_role("heading", name="Inventory write metrics")).to_be_visible()
