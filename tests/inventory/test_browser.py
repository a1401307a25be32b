"""The conflict panel and the adjustment form in a real browser (Debian's Chromium), HTMX included. The flows whose
layout matters run on a phone and check the loaded page at a phone's width and a desktop's."""

import pytest
from django.contrib.auth.models import User

from inventory import selectors, services
from tests.browser.pages import PHONE, at_both_widths, outside_the_screen, sideways_scroll

pytestmark = pytest.mark.browser


def logged_in_page(browser, live_server, username):
    page = browser.new_context().new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw-browser-1")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/**")
    return page


@pytest.fixture
def two_staff(transactional_db):
    for name in ("ana", "bo"):
        User.objects.create_user(name, f"{name}@uni.test", "pw-browser-1", is_staff=True)


def test_a_colleagues_location_survives_my_rename(ddb, live_server, browser, two_staff):
    # Issue 11 item 1, as it was seen: the second editor's save used to write the stale location back.
    services.item_create(sku="TSHIRT-M", name="T-shirt (M)", quantity=10, location="Store room A", actor="ana")
    mine = logged_in_page(browser, live_server, "ana")
    theirs = logged_in_page(browser, live_server, "bo")
    mine.goto(f"{live_server.url}/inventory/TSHIRT-M/edit/")
    theirs.goto(f"{live_server.url}/inventory/TSHIRT-M/edit/")
    theirs.fill("input[name=location]", "Cage 4")
    theirs.click("#edit-form button[type=submit]")
    theirs.wait_for_url(f"{live_server.url}/inventory/TSHIRT-M/")

    mine.fill("input[name=name]", "Tee medium")
    mine.click("#edit-form button[type=submit]")
    mine.wait_for_url(f"{live_server.url}/inventory/TSHIRT-M/")
    assert "Kept the changes bo made meanwhile" in mine.inner_text("body")
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, stored.location, int(stored.version)) == ("Tee medium", "Cage 4", 3)


def test_a_clash_is_decided_in_the_panel_and_nothing_is_clipped(ddb, live_server, browser, two_staff):
    services.item_create(sku="TSHIRT-M", name="T-shirt (M)", quantity=10, location="Store room A", actor="ana")
    mine = logged_in_page(browser, live_server, "ana")
    mine.set_viewport_size(PHONE)
    mine.goto(f"{live_server.url}/inventory/TSHIRT-M/edit/")
    services.item_update(sku="TSHIRT-M", expected_version=1, name="Tee (M)", description="", quantity=10,
                         location="Cage 4", actor="bo")
    mine.fill("input[name=name]", "Shirt medium")
    mine.fill("input[name=quantity]", "12")
    mine.evaluate("window.notReloaded = true")
    mine.click("#edit-form button[type=submit]")
    panel = mine.locator(".conflict")
    panel.wait_for()
    assert mine.evaluate("window.notReloaded === true")  # swapped in by htmx, not a new page
    clash = panel.locator("tr.merge-clash")
    assert clash.count() == 1 and "Shirt medium" in clash.inner_text() and "Tee (M)" in clash.inner_text()
    # Every cell of the panel lies inside the viewport: the Yours column is not clipped on a phone.
    assert at_both_widths(mine, lambda page: outside_the_screen(page, panel.locator("td"))) == []
    assert selectors.item_get(sku="TSHIRT-M").name == "Tee (M)"  # nothing written while they decide

    mine.fill("input[name=name]", "Tee (M)")  # their name wins the clash; my quantity and their room stay
    mine.click("text=Save the form’s values on top of v2")
    mine.wait_for_url(f"{live_server.url}/inventory/TSHIRT-M/")
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, int(stored.quantity), stored.location, int(stored.version)) == ("Tee (M)", 12, "Cage 4", 3)


def test_discard_mine_reloads_the_stored_values(ddb, live_server, browser, two_staff):
    services.item_create(sku="MUG", name="Mug", quantity=4, actor="ana")
    mine = logged_in_page(browser, live_server, "ana")
    mine.goto(f"{live_server.url}/inventory/MUG/edit/")
    services.item_update(sku="MUG", expected_version=1, name="Cup", description="", quantity=4, location="",
                         actor="bo")
    services.item_adjust(sku="MUG", delta=-1, reason="sold", actor="bo")
    mine.fill("input[name=name]", "Big mug")
    mine.click("#edit-form button[type=submit]")
    mine.locator(".conflict").wait_for()
    mine.click("text=Discard mine")
    mine.locator(".conflict").wait_for(state="detached")
    assert mine.input_value("input[name=name]") == "Cup" and mine.input_value("input[name=quantity]") == "3"
    assert int(selectors.item_get(sku="MUG").version) == 3


def test_adjustment_over_htmx_updates_stock_and_refuses_overselling(ddb, live_server, browser, two_staff):
    services.item_create(sku="BADGE", name="Badge", quantity=5, actor="ana")
    page = logged_in_page(browser, live_server, "ana")
    page.goto(f"{live_server.url}/inventory/BADGE/")
    page.fill("input[name=amount]", "2")
    page.fill("input[name=reason]", "sold at the fair")
    page.evaluate("window.notReloaded = true")
    page.click(".adjust-form button")
    page.locator("text=Removed 2: 3 in stock now.").wait_for()
    assert page.evaluate("window.notReloaded === true")
    assert page.inner_text("#quantity") == "3"
    page.fill("input[name=amount]", "9")
    page.click(".adjust-form button")
    page.locator("text=Only 3 in stock: cannot take 9.").wait_for()
    assert int(selectors.item_get(sku="BADGE").quantity) == 3


def _in_stock_cut_off(page) -> list[str]:
    """The In stock heading and figure, each if it reaches past the edge of the table's scroll box or the screen."""
    # Inside its scroll box, not merely inside the page: a cell past the box's edge is cut off until scrolled.
    frame = page.locator(".table-scroll").bounding_box()
    right = min(page.viewport_size["width"], frame["x"] + frame["width"])
    found = []
    for cell in (page.locator("th", has_text="In stock"), page.locator("td.num", has_text="1234").first):
        box = cell.bounding_box()
        if not (box and box["x"] >= frame["x"] and box["x"] + box["width"] <= right + 0.5):
            found.append(f"{box} cut off by {frame}")
    return found + sideways_scroll(page)


def test_the_in_stock_column_is_fully_visible(ddb, live_server, browser, two_staff):
    services.item_create(sku="HOODIEXXLNAVY2026SPECIAL", name="Hoodie, navy, extra extra large (2026 design)",
                         quantity=1234, location="Storeroom_A_shelf_12", actor="ana")
    page = logged_in_page(browser, live_server, "ana")
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/inventory/")
    assert at_both_widths(page, _in_stock_cut_off) == []
