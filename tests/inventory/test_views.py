"""Inventory pages: staff only, the stale-edit conflict panel, adjustments with readable refusals, import."""

import re
import uuid

from django.core.files.uploadedfile import SimpleUploadedFile

from inventory import selectors, services


def edit_form(**overrides):
    data = {"name": "T-shirt (M)", "description": "Navy, logo front", "quantity": "10", "location": "Store room A",
            "version": "1"}
    return {**data, **overrides}


def adjust_form(key=None, **overrides):
    data = {"direction": "remove", "amount": "2", "reason": "sold", "idempotency_key": key or str(uuid.uuid4())}
    return {**data, **overrides}


def rendered_key(page: str) -> str:
    return re.search(r'name="idempotency_key" value="([0-9a-f-]{36})"', page).group(1)


# --- access -----------------------------------------------------------------------------------------------

def test_anonymous_is_sent_to_log_in(item, client):
    for url in ("/inventory/", "/inventory/TSHIRT-M/", "/inventory/TSHIRT-M/edit/", "/diagnostics/write-metrics/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_students_get_403_and_no_link(item, student_client):
    assert "/inventory/" not in student_client.get("/events/").content.decode()
    for url in ("/inventory/", "/inventory/new/", "/inventory/TSHIRT-M/", "/inventory/TSHIRT-M/edit/",
                "/inventory/TSHIRT-M/history/",
                "/inventory/import/", "/diagnostics/write-metrics/"):
        assert student_client.get(url).status_code == 403, url
    assert student_client.post("/inventory/TSHIRT-M/adjust/", adjust_form()).status_code == 403
    assert student_client.post("/inventory/TSHIRT-M/edit/", edit_form(name="x")).status_code == 403
    assert int(selectors.item_get(sku="TSHIRT-M").version) == 1


def test_staff_sees_nav_link_and_list(item, staff_client):
    page = staff_client.get("/events/").content.decode()
    assert 'href="/inventory/">Inventory</a>' in page
    listing = staff_client.get("/inventory/").content.decode()
    assert "TSHIRT-M" in listing and "T-shirt (M)" in listing and "Store room A" in listing


# --- create -----------------------------------------------------------------------------------------------

def test_staff_creates_an_item(ddb, staff_client):
    response = staff_client.post("/inventory/new/", {"sku": "MUG", "name": "Mug", "quantity": "4", "location": ""})
    assert response.status_code == 302 and response["Location"] == "/inventory/MUG/"
    assert int(selectors.item_get(sku="MUG").quantity) == 4


def test_taken_sku_is_a_field_error(item, staff_client):
    response = staff_client.post("/inventory/new/", {"sku": "TSHIRT-M", "name": "Other", "quantity": "1"})
    assert response.status_code == 200
    assert "TSHIRT-M is taken: choose another SKU." in response.content.decode()
    assert selectors.item_get(sku="TSHIRT-M").name == "T-shirt (M)"


def test_reserved_and_malformed_skus_are_refused(ddb, staff_client):
    for sku in ("new", "a b", "../x"):
        response = staff_client.post("/inventory/new/", {"sku": sku, "name": "X", "quantity": "1"})
        assert response.status_code == 200 and "field-error" in response.content.decode()
    assert selectors.item_list() == []


# --- detail, history, adjustments ---------------------------------------------------------------------------

def test_detail_shows_stock_history_and_a_fresh_key_per_render(item, staff_client):
    services.item_adjust(sku="TSHIRT-M", delta=-3, reason="sold at the fair", actor="bo")
    first = staff_client.get("/inventory/TSHIRT-M/").content.decode()
    assert 'id="quantity">7<' in first
    assert "sold at the fair" in first and "v2" in first and "by <strong>bo</strong>" in first
    assert rendered_key(first) != rendered_key(staff_client.get("/inventory/TSHIRT-M/").content.decode())
    # A cached copy would carry a used key back into the form.
    assert "no-store" in staff_client.get("/inventory/TSHIRT-M/")["Cache-Control"]


def test_adjust_without_js_redirects_with_a_message(item, staff_client):
    response = staff_client.post("/inventory/TSHIRT-M/adjust/", adjust_form(), follow=True)
    assert "Removed 2: 8 in stock now." in response.content.decode()
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 8


def test_double_submitted_form_applies_once(item, staff_client):
    key = rendered_key(staff_client.get("/inventory/TSHIRT-M/").content.decode())
    staff_client.post("/inventory/TSHIRT-M/adjust/", adjust_form(key))
    again = staff_client.post("/inventory/TSHIRT-M/adjust/", adjust_form(key), follow=True)
    assert "already applied" in again.content.decode()
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 8


def test_adjust_over_htmx_swaps_the_stock_panel(item, staff_client):
    response = staff_client.post("/inventory/TSHIRT-M/adjust/", adjust_form(direction="add", amount="50",
                                                                            reason="received"),
                                 HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200 and "<html" not in page and 'id="stock"' in page
    assert "Added 50: 60 in stock now." in page and 'id="quantity">60<' in page


def test_overselling_shows_the_stock_on_hand(item, staff_client):
    response = staff_client.post("/inventory/TSHIRT-M/adjust/", adjust_form(amount="13"))
    assert response.status_code == 409
    assert "Only 10 in stock: cannot take 13." in response.content.decode()
    htmx = staff_client.post("/inventory/TSHIRT-M/adjust/", adjust_form(amount="13"), HTTP_HX_REQUEST="true")
    assert htmx.status_code == 200 and "Only 10 in stock" in htmx.content.decode()
    assert int(selectors.item_get(sku="TSHIRT-M").version) == 1


def test_invalid_adjustment_shows_field_errors(item, staff_client):
    response = staff_client.post("/inventory/TSHIRT-M/adjust/", adjust_form(amount="0"))
    assert response.status_code == 400
    assert "Ensure this value is greater than or equal to 1." in response.content.decode()
    missing_key = staff_client.post("/inventory/TSHIRT-M/adjust/", adjust_form(idempotency_key=""))
    assert missing_key.status_code == 400 and "Idempotency-Key" in missing_key.content.decode()


# --- versioned edit and the conflict panel ------------------------------------------------------------------

def test_edit_form_carries_the_version_read(item, staff_client):
    services.item_adjust(sku="TSHIRT-M", delta=-1, reason="sold", actor="bo")
    page = staff_client.get("/inventory/TSHIRT-M/edit/").content.decode()
    assert 'name="version" value="2"' in page and 'value="9"' in page


def test_edit_saves_and_redirects(item, staff_client):
    response = staff_client.post("/inventory/TSHIRT-M/edit/", edit_form(location="Store room B"))
    assert response.status_code == 302 and response["Location"] == "/inventory/TSHIRT-M/"
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.location, int(stored.version), stored.updated_by) == ("Store room B", 2, "staffer")


def test_stale_form_shows_conflict_panel_with_both_versions_and_writes_nothing(item, staff_client):
    services.item_update(sku="TSHIRT-M", expected_version=1, name="T-shirt (M)", description="Navy, logo front",
                         quantity=10, location="Cage 4", actor="cy")
    services.item_adjust(sku="TSHIRT-M", delta=-3, reason="sold at the fair", actor="dee")
    response = staff_client.post("/inventory/TSHIRT-M/edit/", edit_form(name="Tee medium"), HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 409 and "<html" not in page and 'id="edit-region"' in page
    assert "Someone else changed this item while you were editing" in page
    assert "cy, dee changed this item after you opened it (version 1 → 3)" in page
    # Theirs and mine side by side, what changed in between and who did it.
    assert "Stored now (v3)" in page and "You opened version 1; it is at version 3 now." in page
    assert "Cage 4" in page and "Tee medium" in page
    assert "sold at the fair" in page and "<strong>dee</strong>" in page and "<strong>cy</strong>" in page
    assert "Save the form’s values on top of v3" in page and "Discard mine" in page
    assert 'name="version" value="3"' in page and 'value="Tee medium"' in page
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, int(stored.version)) == ("T-shirt (M)", 3)


def test_apply_mine_saves_on_top_of_the_new_version(item, staff_client):
    services.item_adjust(sku="TSHIRT-M", delta=-3, reason="sold", actor="dee")
    staff_client.post("/inventory/TSHIRT-M/edit/", edit_form(name="Tee medium"), HTTP_HX_REQUEST="true")
    applied = staff_client.post("/inventory/TSHIRT-M/edit/", edit_form(name="Tee medium", version="2"),
                                HTTP_HX_REQUEST="true")
    assert applied.status_code == 200 and applied["HX-Redirect"] == "/inventory/TSHIRT-M/"
    stored = selectors.item_get(sku="TSHIRT-M")
    # "Mine" included the quantity I saw (10): applying on top is a deliberate choice, recorded as such.
    assert (stored.name, int(stored.quantity), int(stored.version)) == ("Tee medium", 10, 3)
    latest = selectors.item_history(sku="TSHIRT-M")[0]
    assert latest.changed_by == "staffer" and latest.before_values["quantity"] == 7


def test_discard_mine_reloads_stored_values_and_writes_nothing(item, staff_client):
    services.item_adjust(sku="TSHIRT-M", delta=-3, reason="sold", actor="dee")
    staff_client.post("/inventory/TSHIRT-M/edit/", edit_form(name="Tee medium"), HTTP_HX_REQUEST="true")
    fresh = staff_client.get("/inventory/TSHIRT-M/edit/", HTTP_HX_REQUEST="true")
    page = fresh.content.decode()
    assert fresh.status_code == 200 and "<html" not in page and "conflict" not in page
    assert 'name="version" value="2"' in page and 'value="T-shirt (M)"' in page and 'value="7"' in page
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, int(stored.version)) == ("T-shirt (M)", 2)


def test_conflict_without_js_is_a_409_page(item, staff_client):
    services.item_adjust(sku="TSHIRT-M", delta=-3, reason="sold", actor="dee")
    response = staff_client.post("/inventory/TSHIRT-M/edit/", edit_form(name="Tee medium"))
    assert response.status_code == 409 and "<html" in response.content.decode()
    assert "Save the form’s values on top of v2" in response.content.decode()


def test_invalid_edit_shows_errors(item, staff_client):
    response = staff_client.post("/inventory/TSHIRT-M/edit/", edit_form(quantity="-4"))
    assert response.status_code == 200 and "greater than or equal to 0" in response.content.decode()


def test_unknown_item_pages_are_404(ddb, staff_client):
    assert staff_client.get("/inventory/NOPE/").status_code == 404
    assert staff_client.get("/inventory/NOPE/edit/").status_code == 404
    assert staff_client.post("/inventory/NOPE/adjust/", adjust_form()).status_code == 404


# --- import and metrics -----------------------------------------------------------------------------------

def test_import_from_a_file_reports_each_row(item, staff_client):
    upload = SimpleUploadedFile("count.csv", b"sku,quantity\nTSHIRT-M,25\n", content_type="text/csv")
    response = staff_client.post("/inventory/import/", {"csv_file": upload, "reason": "monthly count"})
    page = response.content.decode()
    assert response.status_code == 200 and "Updated" in page
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 25


def test_an_unknown_sku_imports_nothing_and_says_which_line(item, staff_client):
    upload = SimpleUploadedFile("count.csv", b"sku,quantity\nTSHIRT-M,25\nGHOST,3\n", content_type="text/csv")
    response = staff_client.post("/inventory/import/", {"csv_file": upload, "reason": "monthly count"})
    page = response.content.decode()
    assert response.status_code == 400 and "line 3: there is no inventory item &#x27;GHOST&#x27;" in page
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 10


def test_import_with_a_bad_line_shows_it_and_writes_nothing(item, staff_client):
    response = staff_client.post("/inventory/import/", {"csv_text": "TSHIRT-M,25\nMUG,lots", "reason": "count"})
    assert response.status_code == 400 and "line 2: quantity &#x27;lots&#x27; is not a whole number" in \
        response.content.decode()
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 10


def test_write_metrics_are_diagnostics_not_a_storekeepers_page(item, staff_client):
    old = staff_client.get("/inventory/metrics/")
    assert old.status_code == 301 and old["Location"] == "/diagnostics/write-metrics/"
    assert "/diagnostics/write-metrics/" not in staff_client.get("/inventory/").content.decode()
    assert "/diagnostics/write-metrics/" in staff_client.get("/accounts/").content.decode()


def test_metrics_page_shows_counts_per_operation(item, staff_client):
    services.item_adjust(sku="TSHIRT-M", delta=-1, reason="sold", actor="bo")
    page = staff_client.get("/diagnostics/write-metrics/").content.decode()
    assert "<th scope=\"row\">adjust</th>" in page and "<th scope=\"row\">create</th>" in page
    assert "Lost-race rate" in page and "WCU / call" in page


def test_full_history_page_lists_every_change_and_detail_links_to_it(item, staff_client, monkeypatch):
    from inventory import views

    monkeypatch.setattr(views, "HISTORY_ON_DETAIL", 2)
    for n in range(3):
        services.item_adjust(sku="TSHIRT-M", delta=1, reason=f"delivery {n}", actor="bo")
    detail = staff_client.get("/inventory/TSHIRT-M/").content.decode()
    assert "delivery 2" in detail and "delivery 0" not in detail
    assert 'href="/inventory/TSHIRT-M/history/">All 4 changes</a>' in detail
    page = staff_client.get("/inventory/TSHIRT-M/history/").content.decode()
    assert [f"delivery {n}" in page for n in range(3)] == [True, True, True]
    assert page.index("delivery 2") < page.index("delivery 0")  # newest first
    assert staff_client.get("/inventory/NOPE/history/").status_code == 404
