"""The conflict panel and the adjustment form in a real browser (Debian's Chromium), HTMX included."""

import pytest
from django.contrib.auth.models import User

from inventory import selectors, services

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


def test_conflict_panel_swaps_in_and_apply_mine_saves(ddb, live_server, browser, two_staff):
    services.item_create(sku="TSHIRT-M", name="T-shirt (M)", quantity=10, location="Store room A", actor="ana")
    mine = logged_in_page(browser, live_server, "ana")
    theirs = logged_in_page(browser, live_server, "bo")
    mine.goto(f"{live_server.url}/inventory/TSHIRT-M/edit/")
    theirs.goto(f"{live_server.url}/inventory/TSHIRT-M/edit/")
    theirs.fill("input[name=location]", "Cage 4")
    theirs.click("#edit-form button[type=submit]")
    theirs.wait_for_url(f"{live_server.url}/inventory/TSHIRT-M/")

    mine.fill("input[name=name]", "Tee medium")
    mine.evaluate("window.notReloaded = true")
    mine.click("#edit-form button[type=submit]")
    panel = mine.locator(".conflict")
    panel.wait_for()
    assert mine.evaluate("window.notReloaded === true")  # swapped in by htmx, not a new page
    text = panel.inner_text()
    assert "bo changed this item" in text and "Cage 4" in text and "Tee medium" in text
    assert selectors.item_get(sku="TSHIRT-M").name == "T-shirt (M)"  # nothing written while they choose

    mine.click("text=Apply my values on top of v2")
    mine.wait_for_url(f"{live_server.url}/inventory/TSHIRT-M/")
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, stored.location, int(stored.version)) == ("Tee medium", "Store room A", 3)


def test_discard_mine_reloads_the_stored_values(ddb, live_server, browser, two_staff):
    services.item_create(sku="MUG", name="Mug", quantity=4, actor="ana")
    mine = logged_in_page(browser, live_server, "ana")
    mine.goto(f"{live_server.url}/inventory/MUG/edit/")
    services.item_adjust(sku="MUG", delta=-1, reason="sold", actor="bo")
    mine.fill("input[name=name]", "Big mug")
    mine.click("#edit-form button[type=submit]")
    mine.locator(".conflict").wait_for()
    mine.click("text=Discard mine")
    mine.locator(".conflict").wait_for(state="detached")
    assert mine.input_value("input[name=name]") == "Mug" and mine.input_value("input[name=quantity]") == "3"
    assert int(selectors.item_get(sku="MUG").version) == 2


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
