"""PATCH /api/inventory/<sku> with If-Match: only the changed fields, merged three ways (issue 11 item 1)."""

import json

import pytest

from inventory import selectors, services
from tests.helpers import assert_problem

URL = "/api/inventory/LANYARD"


def patch(client, body, if_match='"1"'):
    headers = {"If-Match": if_match} if if_match else {}
    data = body if isinstance(body, str) else json.dumps(body)
    return client.patch(URL, data=data, content_type="application/json", headers=headers)


@pytest.fixture
def lanyard(ddb):
    return services.item_create(sku="LANYARD", name="Lanyard", description="Blue", quantity=40, location="Box 3",
                                actor="ana")


def test_patch_at_the_current_version_changes_only_the_fields_sent(lanyard, staff_client):
    response = patch(staff_client, {"quantity": 35})
    assert response.status_code == 200 and response["ETag"] == '"2"'
    assert response.json() | {"updated_at": None} == {
        "sku": "LANYARD", "name": "Lanyard", "description": "Blue", "quantity": 35, "location": "Box 3",
        "version": 2, "updated_at": None, "updated_by": "staffer", "team": None}


def test_stale_patch_of_an_untouched_field_merges_and_keeps_the_colleagues_change(lanyard, staff_client):
    services.item_update(sku="LANYARD", expected_version=1, name="Lanyard (blue)", description="Blue", quantity=40,
                         location="Box 9", actor="cy")
    response = patch(staff_client, {"quantity": 35})
    assert response.status_code == 200 and response["ETag"] == '"3"'
    stored = selectors.item_get(sku="LANYARD")
    assert (stored.name, stored.location, int(stored.quantity)) == ("Lanyard (blue)", "Box 9", 35)


def test_stale_patch_of_a_field_changed_meanwhile_is_412_naming_the_clash(lanyard, staff_client):
    services.item_adjust(sku="LANYARD", delta=-2, reason="sold", actor="cy")
    body = assert_problem(patch(staff_client, {"quantity": 35, "location": "Box 4"}), 412)
    assert body["clashes"] == {"quantity": {"base": 40, "theirs": 38, "yours": 35}}
    assert body["current"]["version"] == 2 and "quantity" in body["errors"]
    stored = selectors.item_get(sku="LANYARD")
    assert (int(stored.quantity), stored.location, int(stored.version)) == (38, "Box 3", 2)


def test_put_keeps_its_strict_semantics(lanyard, staff_client):
    services.item_adjust(sku="LANYARD", delta=-2, reason="sold", actor="cy")
    body = {"name": "Lanyard", "description": "Blue", "quantity": 40, "location": "Box 4"}
    response = staff_client.put(URL, data=json.dumps(body), content_type="application/json",
                                headers={"If-Match": '"1"'})
    assert_problem(response, 412)


@pytest.mark.parametrize(("body", "if_match", "status"), [
    ({"quantity": 1}, None, 428),
    ({"quantity": 1}, "v1", 400),
    ({}, '"1"', 400),
    ({"sku": "X"}, '"1"', 400),
    ({"quantity": -1}, '"1"', 400),
    ({"quantity": "3"}, '"1"', 400),
    ({"name": "  "}, '"1"', 400),
    ({"quantity": 1}, '"7"', 412),
    ("[1]", '"1"', 400),
])
def test_bad_patches_are_clear_problems(lanyard, staff_client, body, if_match, status):
    assert_problem(patch(staff_client, body, if_match), status)
    assert int(selectors.item_get(sku="LANYARD").version) == 1
