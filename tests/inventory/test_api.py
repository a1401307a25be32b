"""The inventory API's statuses and problem+json bodies (DynamoDB Local: every write is a transaction)."""

import json

import pytest

from inventory import selectors, services
from tests.helpers import assert_problem

VALID = {"sku": "LANYARD", "name": "Lanyard", "description": "Blue", "quantity": 40, "location": "Box 3"}
KEY = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def send(client, method, url, body=None, **headers):
    data = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
    return getattr(client, method)(url, data=data, content_type="application/json", headers=headers)



@pytest.fixture
def created(ddb, staff_client):
    response = send(staff_client, "post", "/api/inventory", VALID)
    assert response.status_code == 201, response.content
    return response


def edit_body(**overrides):
    return {"name": "Lanyard", "description": "Blue", "quantity": 40, "location": "Box 3", **overrides}


def test_create_returns_the_item_with_etag_and_location(created, staff_client):
    body = created.json()
    assert {k: body[k] for k in ("sku", "name", "quantity", "location", "version", "updated_by")} == {
        "sku": "LANYARD", "name": "Lanyard", "quantity": 40, "location": "Box 3", "version": 1,
        "updated_by": "staffer"}
    assert created["ETag"] == '"1"' and created["Location"] == "/api/inventory/LANYARD"
    fetched = staff_client.get("/api/inventory/LANYARD")
    assert fetched.json() == body and fetched["ETag"] == '"1"'
    assert staff_client.get("/api/inventory").json() == {"items": [body]}


def test_existing_sku_is_409(created, staff_client):
    body = assert_problem(send(staff_client, "post", "/api/inventory", {**VALID, "name": "Other"}), 409)
    assert "already exists" in body["detail"]
    assert selectors.item_get(sku="LANYARD").name == "Lanyard"


@pytest.mark.parametrize("body", [
    {**VALID, "quantity": -1}, {**VALID, "quantity": "many"}, {**VALID, "sku": "has space"}, {**VALID, "name": ""},
    "not json", [1, 2],
])
def test_invalid_create_is_400(ddb, staff_client, body):
    assert_problem(send(staff_client, "post", "/api/inventory", body), 400)
    assert selectors.item_list() == []


def test_put_with_current_etag_saves_and_returns_new_etag(created, staff_client):
    response = send(staff_client, "put", "/api/inventory/LANYARD", edit_body(quantity=35), **{"If-Match": '"1"'})
    assert response.status_code == 200, response.content
    assert response["ETag"] == '"2"' and response.json()["quantity"] == 35 and response.json()["version"] == 2


def test_stale_put_is_412_with_the_current_item(created, staff_client):
    send(staff_client, "put", "/api/inventory/LANYARD", edit_body(location="Box 9"), **{"If-Match": '"1"'})
    body = assert_problem(
        send(staff_client, "put", "/api/inventory/LANYARD", edit_body(name="Mine"), **{"If-Match": '"1"'}), 412)
    assert body["current"]["location"] == "Box 9" and body["current"]["version"] == 2
    assert [c["version"] for c in body["changes"]] == [2]
    assert selectors.item_get(sku="LANYARD").name == "Lanyard"


def test_put_without_if_match_is_428(created, staff_client):
    body = assert_problem(send(staff_client, "put", "/api/inventory/LANYARD", edit_body(name="Mine")), 428)
    assert "If-Match" in body["detail"]
    assert int(selectors.item_get(sku="LANYARD").version) == 1


@pytest.mark.parametrize("if_match", ["*", "W/\"1\"", "one", '"1", "2"'])
def test_unusable_if_match_is_400(created, staff_client, if_match):
    assert_problem(send(staff_client, "put", "/api/inventory/LANYARD", edit_body(), **{"If-Match": if_match}), 400)


def test_put_missing_item_is_404_and_invalid_body_400(created, staff_client):
    assert_problem(send(staff_client, "put", "/api/inventory/NOPE", edit_body(), **{"If-Match": '"1"'}), 404)
    assert_problem(send(staff_client, "put", "/api/inventory/LANYARD", edit_body(quantity=-5),
                        **{"If-Match": '"1"'}), 400)


def test_adjustment_returns_quantity_and_version_and_replays_byte_for_byte(created, staff_client):
    first = send(staff_client, "post", "/api/inventory/LANYARD/adjustments", {"delta": -2, "reason": "sold"},
                 **{"Idempotency-Key": KEY})
    assert first.status_code == 200 and first.json() == {"quantity": 38, "version": 2}
    assert "Idempotent-Replayed" not in first
    again = send(staff_client, "post", "/api/inventory/LANYARD/adjustments", {"delta": -2, "reason": "sold"},
                 **{"Idempotency-Key": KEY})
    assert again.status_code == 200 and again.content == first.content
    assert again["Idempotent-Replayed"] == "true"
    assert int(selectors.item_get(sku="LANYARD").quantity) == 38


def test_adjustment_that_would_go_negative_is_409_with_stock_on_hand(created, staff_client):
    body = assert_problem(send(staff_client, "post", "/api/inventory/LANYARD/adjustments",
                               {"delta": -41, "reason": "sold"}, **{"Idempotency-Key": KEY}), 409)
    assert body["on_hand"] == 40 and body["detail"] == "Only 40 in stock: cannot take 41."
    # A refusal is not stored: the same key may succeed once stock arrives.
    send(staff_client, "post", "/api/inventory/LANYARD/adjustments", {"delta": 10, "reason": "received"},
         **{"Idempotency-Key": "1a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"})
    retry = send(staff_client, "post", "/api/inventory/LANYARD/adjustments", {"delta": -41, "reason": "sold"},
                 **{"Idempotency-Key": KEY})
    assert retry.status_code == 200 and retry.json() == {"quantity": 9, "version": 3}


@pytest.mark.parametrize("body", [{"delta": 0}, {"delta": 1.5}, {"delta": "2"}, {"delta": True}, {},
                                  {"delta": 2, "reason": 7}])
def test_bad_delta_is_400(created, staff_client, body):
    assert_problem(send(staff_client, "post", "/api/inventory/LANYARD/adjustments", body,
                        **{"Idempotency-Key": KEY}), 400)
    assert int(selectors.item_get(sku="LANYARD").version) == 1


@pytest.mark.parametrize("key", [None, "not a key"])
def test_adjustment_needs_a_well_formed_idempotency_key(created, staff_client, key):
    headers = {"Idempotency-Key": key} if key else {}
    assert_problem(send(staff_client, "post", "/api/inventory/LANYARD/adjustments", {"delta": 1}, **headers), 400)


def test_key_reused_for_another_adjustment_is_422(created, staff_client):
    send(staff_client, "post", "/api/inventory/LANYARD/adjustments", {"delta": -2}, **{"Idempotency-Key": KEY})
    assert_problem(send(staff_client, "post", "/api/inventory/LANYARD/adjustments", {"delta": -3},
                        **{"Idempotency-Key": KEY}), 422)


def test_history_is_newest_first(created, staff_client):
    services.item_adjust(sku="LANYARD", delta=-2, reason="sold", actor="bo")
    send(staff_client, "put", "/api/inventory/LANYARD", edit_body(quantity=30), **{"If-Match": '"2"'})
    body = staff_client.get("/api/inventory/LANYARD/history").json()
    assert [(c["version"], c["kind"]) for c in body["changes"]] == [(3, "edit"), (2, "adjust"), (1, "create")]
    assert body["changes"][1]["delta"] == -2 and body["changes"][1]["before"]["quantity"] == 40
    assert body["changes"][0]["after"]["quantity"] == 30 and body["changes"][2]["before"] is None


def test_unknown_item_is_404(ddb, staff_client):
    assert_problem(staff_client.get("/api/inventory/NOPE"), 404)
    assert_problem(staff_client.get("/api/inventory/NOPE/history"), 404)
    assert_problem(send(staff_client, "post", "/api/inventory/NOPE/adjustments", {"delta": 1},
                        **{"Idempotency-Key": KEY}), 404)


def test_students_get_403_and_anonymous_401(created, student_client, client):
    for c, status in ((student_client, 403), (client, 401)):
        assert_problem(c.get("/api/inventory"), status)
        assert_problem(c.get("/api/inventory/LANYARD"), status)
        assert_problem(c.get("/api/inventory/LANYARD/history"), status)
        assert_problem(send(c, "post", "/api/inventory", {**VALID, "sku": "X"}), status)
        assert_problem(send(c, "put", "/api/inventory/LANYARD", edit_body(name="x"), **{"If-Match": '"1"'}), status)
        assert_problem(send(c, "post", "/api/inventory/LANYARD/adjustments", {"delta": -1},
                            **{"Idempotency-Key": KEY}), status)
    stored = selectors.item_get(sku="LANYARD")
    assert (stored.name, int(stored.version)) == ("Lanyard", 1)


def test_wrong_method_is_405(created, staff_client):
    response = staff_client.delete("/api/inventory/LANYARD")
    assert_problem(response, 405)
    assert response["Allow"] == "GET, PUT, PATCH"


def test_unsafe_api_calls_need_the_csrf_token(created, csrf_staff_client):
    assert send(csrf_staff_client, "post", "/api/inventory/LANYARD/adjustments", {"delta": -1},
                **{"Idempotency-Key": KEY}).status_code == 403
    assert int(selectors.item_get(sku="LANYARD").quantity) == 40
