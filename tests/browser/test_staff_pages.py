"""Staff pages look finished: one primary action and the rest under "More" (a <details>, as the site's menu),
on one row at 390 and 1280 px, no sideways scroll, the past-start confirmation beside its words under the start,
and no axe violation on the event page, its report and its copy form."""

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from registrations.events import services as event_services
from tems.clock import utcnow
from tests.browser.helpers import log_in
from tests.browser.pages import axe_violations, fits_the_width, new_sized_page
from tests.registrations.helpers import register

pytestmark = pytest.mark.browser

WIDTHS = (390, 1280)


@pytest.fixture
def event(app_server):
    made = event_services.event_create(title="A very long event title that keeps going for the whole of the line",
                                       starts_at=utcnow() + timedelta(days=3), capacity=1, created_by="staff",
                                       offer_hours=24)
    register(made.event_id, "ann", user_name="ann")
    register(made.event_id, "bo", user_name="bo")
    return made


@pytest.mark.parametrize("width", WIDTHS)
def test_the_event_page_has_one_primary_action_and_a_menu(app_server, browser, contexts, staff_user, event, width):
    page = new_sized_page(browser, {"width": width, "height": 900}, contexts)
    log_in(page, app_server, "staffer", "pw-staff-1")
    page.goto(f"{app_server}/events/{event.event_id}/")
    actions = page.locator(".page-head .page-actions")
    assert actions.locator(".button.primary").count() == 1
    edit, more = actions.get_by_role("link", name="Edit event"), actions.locator("summary")
    assert abs(edit.bounding_box()["y"] - more.bounding_box()["y"]) < 2  # one row, never a stack
    expect(page.get_by_role("link", name="Report")).to_be_hidden()
    assert axe_violations(page) == []
    more.click()
    # Open, the menu drops over the page (as the site's menu does), inside the screen's width.
    menu = actions.locator(".actions-menu ul")
    expect(menu.get_by_role("link", name="Report")).to_be_visible()
    box = menu.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width
    assert fits_the_width(page)
    menu.get_by_role("link", name="Report").click()
    expect(page.get_by_role("heading", name="Report")).to_be_visible()
    expect(page.locator(".report-figures")).to_contain_text("Registered")
    assert page.locator("figure.chart svg rect.chart-bar").count() == 1
    assert fits_the_width(page)
    assert axe_violations(page) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_the_copy_form_and_the_past_start_confirmation(app_server, browser, contexts, staff_user, event, width):
    page = new_sized_page(browser, {"width": width, "height": 900}, contexts)
    log_in(page, app_server, "staffer", "pw-staff-1")
    page.goto(f"{app_server}/events/{event.event_id}/copy/")
    expect(page.get_by_role("heading", name="Copy event")).to_be_visible()
    expect(page.get_by_label("Title")).to_have_value(event.title)
    assert fits_the_width(page)
    assert axe_violations(page) == []
    page.get_by_label("Title").fill("Spring open day")
    page.get_by_label("Starts").fill("2020-01-01T10:00")
    page.get_by_role("button", name="Create event").click()
    confirm = page.get_by_label("Yes, this event starts in the past")
    expect(confirm).to_be_visible()
    # Under the start it confirms, before the capacity; the box before its words, on the fields' left edge.
    starts, capacity = page.locator("#id_starts_at").bounding_box(), page.locator("#id_capacity").bounding_box()
    words = page.locator(".field-check label span", has_text="starts in the past").bounding_box()
    box = confirm.bounding_box()
    assert starts["y"] < box["y"] < capacity["y"]
    assert abs(box["x"] - starts["x"]) < 2 and words["x"] > box["x"]
    assert abs((box["y"] + box["height"] / 2) - (words["y"] + words["height"] / 2)) < 4
    assert fits_the_width(page)
    assert axe_violations(page) == []
    confirm.check()
    page.get_by_role("button", name="Create event").click()
    expect(page.get_by_role("heading", name="Spring open day")).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_inventory_has_one_primary_action_and_no_metrics(app_server, browser, contexts, staff_user, width):
    page = new_sized_page(browser, {"width": width, "height": 900}, contexts)
    log_in(page, app_server, "staffer", "pw-staff-1")
    page.goto(f"{app_server}/inventory/")
    actions = page.locator(".page-actions")
    assert actions.locator(".button.primary").count() == 1
    expect(page.get_by_role("link", name="Write metrics")).to_have_count(0)
    actions.locator("summary").click()
    expect(page.get_by_role("link", name="Import counts")).to_be_visible()
    assert fits_the_width(page)
    assert axe_violations(page) == []
    page.goto(f"{app_server}/accounts/")
    page.get_by_role("link", name="inventory write metrics").click()
    expect(page.get_by_role("heading", name="Inventory write metrics")).to_be_visible()
