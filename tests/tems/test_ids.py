"""Ids are validated by shape before any DynamoDB request: 404 for ids in paths, 400 for ids in bodies."""

import json

import pytest
from django.urls import NoReverseMatch, reverse, set_script_prefix

from inventory import selectors as inventory_selectors
from inventory import services as inventory_services
from registrations.ticket_tokens import ticket_token, ticket_url
from tems.ids import id_path, is_valid_id
from tests.helpers import assert_problem

LONG_EVENT_ID = "e" * 2100
LONG_REGISTRATION_ID = "r" * 1500
LONG_SKU = "S" * 3000
KEY = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


@pytest.fixture
def no_dynamodb(monkeypatch):
    """Fail the test if a request reaches DynamoDB at all: the shape check must come first."""
    import botocore.client

    def refuse(self, operation_name, api_params):
        raise AssertionError(f"{operation_name} reached DynamoDB with a malformed id")

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", refuse)


@pytest.mark.parametrize("value", ["0a1b2c3d4e5f", "lab-tryit-0123456789", "TSHIRT-M", "a.b_c-d", "x" * 64,
                                   "0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d"])
def test_ids_we_make_have_the_shape(value):
    assert is_valid_id(value)


@pytest.mark.parametrize("value", ["", "x" * 65, "-lead", "has space", "a/b", "a#b", "é", "\x00", "\ud800", 7, None])
def test_other_values_do_not(value):
    assert not is_valid_id(value)


@pytest.mark.parametrize(("method", "url"), [
    ("get", f"/api/events/{LONG_EVENT_ID}"),
    ("post", f"/api/events/{LONG_EVENT_ID}/registrations"),
    ("delete", f"/api/registrations/{LONG_REGISTRATION_ID}"),
    ("get", f"/api/inventory/{LONG_SKU}"),
    ("put", f"/api/inventory/{LONG_SKU}"),
    ("post", f"/api/inventory/{LONG_SKU}/adjustments"),
    ("get", f"/api/inventory/{LONG_SKU}/history"),
    ("post", f"/api/events/{LONG_EVENT_ID}/checkins"),
    ("get", f"/api/events/{LONG_EVENT_ID}/checkins/stats"),
    ("delete", f"/api/events/0a1b2c3d4e5f/checkins/{LONG_REGISTRATION_ID}"),
    ("get", "/api/events/a%23b"),
    ("get", "/api/inventory/%E2%80%AEevil"),
])
def test_malformed_path_ids_in_the_api_are_problem_404(moto_ddb, staff_client, no_dynamodb, method, url):
    body = {} if method == "get" else {"data": "{}", "content_type": "application/json"}
    response = getattr(staff_client, method)(url, **body, HTTP_IDEMPOTENCY_KEY=KEY, HTTP_IF_MATCH='"1"')
    assert_problem(response, 404)


@pytest.mark.parametrize(("method", "url"), [
    ("get", f"/events/{LONG_EVENT_ID}/"),
    ("get", f"/events/{LONG_EVENT_ID}/edit/"),
    ("post", f"/events/{LONG_EVENT_ID}/register/"),
    ("post", f"/registrations/{LONG_REGISTRATION_ID}/cancel/"),
    ("get", f"/inventory/{LONG_SKU}/"),
    ("get", f"/inventory/{LONG_SKU}/edit/"),
    ("post", f"/inventory/{LONG_SKU}/adjust/"),
    ("get", f"/inventory/{LONG_SKU}/history/"),
    ("get", f"/events/{LONG_EVENT_ID}/door/"),
])
def test_malformed_path_ids_on_pages_are_404(moto_ddb, staff_client, no_dynamodb, method, url):
    assert getattr(staff_client, method)(url, {"idempotency_key": KEY}).status_code == 404


def test_long_sku_in_the_json_body_is_400(moto_ddb, staff_client, no_dynamodb):
    body = {"sku": LONG_SKU, "name": "x", "quantity": 1}
    response = staff_client.post("/api/inventory", data=json.dumps(body), content_type="application/json")
    assert "sku" in assert_problem(response, 400)["errors"]


def test_long_sku_in_the_csv_import_is_refused_cleanly(moto_ddb, staff_client):
    inventory_services.item_create(sku="TSHIRT-M", name="T-shirt", quantity=3, actor="ana")
    csv_text = f"sku,quantity\nTSHIRT-M,5\n{LONG_SKU},4\n"
    response = staff_client.post("/inventory/import/", {"csv_text": csv_text, "reason": "count"})
    assert response.status_code == 400
    assert "line 3" in response.content.decode()
    assert inventory_selectors.item_get(sku="TSHIRT-M").quantity == 3  # nothing half-applied


# --- paths of id routes, resolved once ---------------------------------------------------------------------

@pytest.mark.parametrize(("viewname", "ids"), [
    ("registrations:registration_qr", {"registration_id": "0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d"}),
    ("checkins:api_checkin_undo", {"event_id": "0a1b2c3d4e5f", "registration_id": "r.1_2-3"}),
])
def test_an_id_path_is_the_path_reverse_gives(viewname, ids):
    assert id_path(viewname, **ids) == reverse(viewname, kwargs=ids)
    # A second call (from the template) with other ids still agrees.
    others = {name: value[::-1] + "9" for name, value in ids.items()}
    assert id_path(viewname, **others) == reverse(viewname, kwargs=others)


def test_an_id_path_follows_the_script_prefix():
    ids = {"registration_id": "0a1b2c3d4e5f"}
    plain = id_path("registrations:registration_qr", **ids)
    set_script_prefix("/tems/")
    try:
        assert id_path("registrations:registration_qr", **ids) == "/tems" + plain
    finally:
        set_script_prefix("/")


def test_a_value_that_is_no_id_gets_reverse_and_its_refusal():
    with pytest.raises(NoReverseMatch):
        id_path("registrations:registration_qr", registration_id="a/b")


def test_a_ticket_url_holds_the_path_reverse_gives(settings):
    settings.TEMS_PUBLIC_URL = "https://tems.example"
    url = ticket_url(event_id="0a1b2c3d4e5f", registration_id="r1", user_id="u1")
    token = ticket_token(event_id="0a1b2c3d4e5f", registration_id="r1", user_id="u1")
    assert url == "https://tems.example" + reverse("checkins:ticket", kwargs={"token": token})
