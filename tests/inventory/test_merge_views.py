"""The inventory edit page merges three ways (issue 11 item 1): a colleague's change is never written back."""

import re

from inventory import selectors, services


def opened_form(client, sku="TSHIRT-M") -> dict:
    """The edit form's fields exactly as the page rendered them (version and signed base included)."""
    page = client.get(f"/inventory/{sku}/edit/").content.decode()
    fields = dict(re.findall(r'<input type="(?:hidden|text|number)" name="(\w+)" value="([^"]*)"', page))
    fields["description"] = re.search(r'<textarea name="description"[^>]*>\s*([^<]*)</textarea>', page).group(1)
    return fields


def test_a_colleagues_new_name_survives_my_quantity_edit(item, staff_client):
    form = opened_form(staff_client)
    services.item_update(sku="TSHIRT-M", expected_version=1, name="Tee (M)", description="Navy, logo front",
                         quantity=10, location="Store room A", actor="cy")
    response = staff_client.post("/inventory/TSHIRT-M/edit/", {**form, "quantity": "12"})
    assert response.status_code == 302
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, int(stored.quantity), int(stored.version)) == ("Tee (M)", 12, 3)
    latest = selectors.item_history(sku="TSHIRT-M")[0]
    assert latest.changed_fields == [("quantity", 10, 12)]


def test_a_clash_shows_the_panel_and_saving_the_decision_keeps_their_other_fields(item, staff_client):
    form = opened_form(staff_client)
    services.item_update(sku="TSHIRT-M", expected_version=1, name="Tee (M)", description="Navy, logo front",
                         quantity=10, location="Cage 4", actor="cy")
    response = staff_client.post("/inventory/TSHIRT-M/edit/", {**form, "name": "Shirt medium", "quantity": "12"},
                                 HTTP_HX_REQUEST="true")
    page = response.content.decode()
    # 409, which the htmx-config in base.html swaps like a success (the panel replaces the form).
    assert response.status_code == 409 and "Someone else changed this item while you were editing" in page
    assert "One field was changed by both of you" in page
    assert page.count('class="merge-clash"') == 1 and "Both changed: decide in the form" in page
    assert "Their change is kept" in page and "Your change is applied" in page
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, int(stored.version)) == ("Tee (M)", 2)  # nothing written yet
    # The re-armed form holds their location, my quantity and my name (the clash), based on v2.
    rearmed = dict(re.findall(r'<input type="(?:hidden|text|number)" name="(\w+)" value="([^"]*)"', page))
    assert (rearmed["location"], rearmed["quantity"], rearmed["name"], rearmed["version"]) == (
        "Cage 4", "12", "Shirt medium", "2")
    rearmed["description"] = form["description"]
    saved = staff_client.post("/inventory/TSHIRT-M/edit/", {**rearmed, "name": "Tee (M)"}, HTTP_HX_REQUEST="true")
    assert saved.status_code == 200 and saved["HX-Redirect"]  # htmx is sent on to the saved page
    stored = selectors.item_get(sku="TSHIRT-M")
    assert (stored.name, int(stored.quantity), stored.location, int(stored.version)) == ("Tee (M)", 12, "Cage 4", 3)


def test_a_new_change_while_deciding_shows_the_panel_again(item, staff_client):
    form = opened_form(staff_client)
    services.item_adjust(sku="TSHIRT-M", delta=-3, reason="sold", actor="dee")
    first = staff_client.post("/inventory/TSHIRT-M/edit/", {**form, "quantity": "12"}, HTTP_HX_REQUEST="true")
    rearmed = dict(re.findall(r'<input type="(?:hidden|text|number)" name="(\w+)" value="([^"]*)"',
                              first.content.decode()))
    rearmed["description"] = form["description"]
    services.item_adjust(sku="TSHIRT-M", delta=-1, reason="sold", actor="dee")
    again = staff_client.post("/inventory/TSHIRT-M/edit/", rearmed, HTTP_HX_REQUEST="true")
    assert "Someone else changed this item" in again.content.decode() and "version 3" in again.content.decode()
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 6


def test_a_form_without_a_valid_base_treats_every_difference_as_a_clash(item, staff_client):
    form = opened_form(staff_client)
    services.item_update(sku="TSHIRT-M", expected_version=1, name="Tee (M)", description="Navy, logo front",
                         quantity=10, location="Store room A", actor="cy")
    response = staff_client.post("/inventory/TSHIRT-M/edit/", {**form, "base": "forged", "quantity": "12"})
    assert response.status_code == 409 and selectors.item_get(sku="TSHIRT-M").name == "Tee (M)"


def test_a_busy_item_is_a_message_on_the_form_not_a_500(item, staff_client, monkeypatch):
    from inventory import edits
    from inventory.errors import InventoryError

    def busy(**kwargs):
        raise InventoryError("busy", "TSHIRT-M is being changed by many people at once; try again.", retry_after=1)

    monkeypatch.setattr(edits, "item_update", busy)
    response = staff_client.post("/inventory/TSHIRT-M/edit/", {**opened_form(staff_client), "quantity": "12"})
    assert response.status_code == 503 and "being changed by many people at once" in response.content.decode()
