"""Item history: newest first, one bounded Query per page in the page and the API, signed item-scoped cursors."""

from __future__ import annotations

from inventory import services
from inventory.models import InventoryChange
from tems.metering import metered


def seed_changes(sku: str, first: int, last: int) -> None:
    """History entries first..last of ``sku`` written directly (the item itself comes from ``item_create``)."""
    with InventoryChange.batch_write() as batch:
        for version in range(first, last + 1):
            batch.save(InventoryChange(*InventoryChange.key_for(sku, version), sku=sku, version=version,
                                       kind=InventoryChange.ADJUST, changed_by="bo", reason=f"change {version}",
                                       delta=1, before={"quantity": version}, after={"quantity": version + 1}))


def versions(client, url: str) -> list[int]:
    seen = []
    while url:
        body = client.get(url).json()
        assert len(body["changes"]) <= 50
        seen += [change["version"] for change in body["changes"]]
        url = body["next"]
    return seen


def test_api_history_pages_newest_first(item, staff_client):
    seed_changes("TSHIRT-M", 2, 12)
    first = staff_client.get("/api/inventory/TSHIRT-M/history?limit=5").json()
    assert [c["version"] for c in first["changes"]] == [12, 11, 10, 9, 8]
    assert first["next"].startswith("http://testserver/api/inventory/TSHIRT-M/history?")
    assert versions(staff_client, "/api/inventory/TSHIRT-M/history?limit=5") == list(range(12, 0, -1))


def test_every_history_page_is_one_query_of_at_most_50(item, staff_client):
    seed_changes("TSHIRT-M", 2, 130)
    url = "/api/inventory/TSHIRT-M/history?limit=50"
    while url:
        with metered() as meter:
            body = staff_client.get(url).json()
        # One GetItem for the item's header fields, one Query for the page, whatever the history's length.
        assert dict(meter.requests) == {"GetItem": 1, "Query": 1}
        assert len(body["changes"]) <= 50
        url = body["next"]


def test_history_cursor_survives_changes_made_between_pages(item, staff_client):
    for n in range(6):
        services.item_adjust(sku="TSHIRT-M", delta=1, reason=f"r{n}", actor="bo")
    first = staff_client.get("/api/inventory/TSHIRT-M/history?limit=3").json()
    assert [c["version"] for c in first["changes"]] == [7, 6, 5]
    services.item_adjust(sku="TSHIRT-M", delta=1, reason="late", actor="bo")  # v8 lands above the cursor
    assert versions(staff_client, first["next"]) == [4, 3, 2, 1]


def test_history_cursor_is_scoped_to_its_item(item, staff_client):
    services.item_create(sku="MUG", name="Mug", quantity=1, actor="ana")
    seed_changes("TSHIRT-M", 2, 5)
    cursor = staff_client.get("/api/inventory/TSHIRT-M/history?limit=1").json()["next"].split("cursor=")[1]
    response = staff_client.get(f"/api/inventory/MUG/history?cursor={cursor}")
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert staff_client.get("/api/inventory/TSHIRT-M/history?cursor=forged").status_code == 400


def test_history_page_links_to_older_changes_and_htmx_appends_them(item, staff_client):
    seed_changes("TSHIRT-M", 2, 25)
    page = staff_client.get("/inventory/TSHIRT-M/history/").content.decode()
    assert "change 25" in page and "change 6”" in page and "change 5”" not in page
    link = page.split('href="http://testserver/inventory/TSHIRT-M/history/?cursor=')[1].split('"')[0]
    plain = staff_client.get(f"/inventory/TSHIRT-M/history/?cursor={link}").content.decode()
    assert "<html" in plain.lower() and "change 5”" in plain and "change 6”" not in plain
    fragment = staff_client.get(f"/inventory/TSHIRT-M/history/?cursor={link}", HTTP_HX_REQUEST="true")
    text = fragment.content.decode()
    assert "<html" not in text.lower() and text.count('class="change"') == 5 and "Older changes" not in text


def test_history_page_with_bad_cursor_is_readable_400(item, staff_client):
    response = staff_client.get("/inventory/TSHIRT-M/history/?cursor=forged")
    assert response.status_code == 400 and "This cursor is not valid" in response.content.decode()
