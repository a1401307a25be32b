"""The shared JSON input layer (tems.api): every JSON endpoint refuses hostile bodies with a 400-family problem.

moto: single-threaded, and none of these requests may reach DynamoDB anyway.
"""

import json

import pytest
from django.test import Client, override_settings
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from tests.helpers import assert_problem

EVENT = {"title": "Robotics night", "description": "Bring a robot.", "location": "Atrium",
         "starts_at": "2027-03-01T18:30:00+00:00", "capacity": 12}
ITEM = {"sku": "LANYARD", "name": "Lanyard", "description": "Blue", "quantity": 40, "location": "Box 3"}
KEY = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

# Every endpoint that reads a JSON body, with a valid body for it.
JSON_ENDPOINTS = [
    ("post", "/api/events", EVENT),
    ("post", "/api/inventory", ITEM),
    ("put", "/api/inventory/LANYARD", {k: v for k, v in ITEM.items() if k != "sku"}),
    ("post", "/api/inventory/LANYARD/adjustments", {"delta": 1, "reason": "found one"}),
    ("post", "/api/lab/registration-race", {"technique": "production", "taps": 1, "same_key": True,
                                             "latency_ms": 0}),
    ("post", "/api/lab/lost-update", {"technique": "atomic", "writers": 1, "units_each": 1}),
]
HEADERS = {"HTTP_IDEMPOTENCY_KEY": KEY, "HTTP_IF_MATCH": '"1"'}


def send(client, method, url, data, content_type="application/json", **extra):
    body = data if isinstance(data, (str, bytes)) else json.dumps(data)
    return getattr(client, method)(url, data=body, content_type=content_type, **HEADERS, **extra)


def endpoints():
    return pytest.mark.parametrize(("method", "url", "valid"), JSON_ENDPOINTS,
                                   ids=[url for _, url, _ in JSON_ENDPOINTS])


# --- finding 1: deep nesting and huge numbers ---------------------------------------------------------------

@endpoints()
def test_json_nested_50000_deep_is_400(moto_ddb, staff_client, method, url, valid):
    deep = "[" * 50_000 + "]" * 50_000
    body = assert_problem(send(staff_client, method, url, '{"title": ' + deep + "}"), 400)
    assert "deep" in body["detail"]


@endpoints()
def test_json_nesting_past_the_bound_is_400_even_when_python_could_parse_it(moto_ddb, staff_client, method, url, valid):
    assert_problem(send(staff_client, method, url, {**valid, "extra": json.loads("[" * 40 + "]" * 40)}), 400)


@endpoints()
@pytest.mark.parametrize("number", ["9" * 5000, "1" + "0" * 4400, "1e999999", "-" + "9" * 5000 + ".5"])
def test_huge_numbers_are_400(moto_ddb, staff_client, method, url, valid, number):
    field = next(name for name, value in valid.items() if isinstance(value, int) and not isinstance(value, bool))
    raw = json.dumps({**valid, field: 0}).replace(f'"{field}": 0', f'"{field}": {number}')
    body = assert_problem(send(staff_client, method, url, raw), 400)
    assert field in body.get("errors", {}) or "number" in body["detail"]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_standard_json_constants_are_400(moto_ddb, staff_client, constant):
    assert_problem(send(staff_client, "post", "/api/events", f'{{"title": "x", "capacity": {constant}}}'), 400)


# --- finding 3: lone surrogates and NUL ---------------------------------------------------------------------

@endpoints()
@pytest.mark.parametrize("bad", ["\ud800", "a\udfffb", "nul\x00here"])
def test_lone_surrogates_and_nul_in_any_string_are_400(moto_ddb, staff_client, method, url, valid, bad):
    field = next(name for name, value in valid.items() if isinstance(value, str))
    raw = json.dumps({**valid, field: bad})  # ensure_ascii writes "\ud800" and "\u0000" as JSON escapes
    body = assert_problem(send(staff_client, method, url, raw), 400)
    assert field in body["errors"]


def test_surrogate_in_a_key_is_400(moto_ddb, staff_client):
    assert_problem(send(staff_client, "post", "/api/events", json.dumps({**EVENT, "\ud800": 1})), 400)


def test_nothing_was_stored_after_refusals(moto_ddb, staff_client):
    send(staff_client, "post", "/api/events", json.dumps({**EVENT, "title": "\ud800"}))
    assert staff_client.get("/api/events").json()["events"] == []


# --- finding 4: wrong JSON types ----------------------------------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [
    ("starts_at", 1767225600), ("starts_at", True), ("starts_at", ["2027-03-01T18:30:00+00:00"]),
    ("starts_at", {"date": "2027-03-01"}), ("title", ["x"]), ("title", {"x": 1}), ("title", 5),
    ("description", False), ("location", 1.5), ("capacity", "3"), ("capacity", True), ("capacity", 3.0),
    ("capacity", [3]),
])
def test_wrong_json_types_are_400_naming_the_field(moto_ddb, staff_client, field, value):
    body = assert_problem(send(staff_client, "post", "/api/events", {**EVENT, field: value}), 400)
    assert field in body["errors"]
    assert staff_client.get("/api/events").json()["events"] == []


@pytest.mark.parametrize("starts_at", [
    "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+00:00", "0999-06-01T12:00:00Z",
])
def test_dates_out_of_range_are_400(moto_ddb, staff_client, starts_at):
    body = assert_problem(send(staff_client, "post", "/api/events", {**EVENT, "starts_at": starts_at}), 400)
    assert "starts_at" in body["errors"]


def test_wrong_types_in_inventory_and_lab_are_400(moto_ddb, staff_client):
    refused = assert_problem(send(staff_client, "post", "/api/inventory", {**ITEM, "name": ["x"]}), 400)
    assert "name" in refused["errors"]
    assert "quantity" in assert_problem(send(staff_client, "post", "/api/inventory", {**ITEM, "quantity": "4"}),
                                        400)["errors"]
    body = assert_problem(send(staff_client, "post", "/api/lab/lost-update",
                               {"technique": "atomic", "writers": True, "units_each": 1}), 400)
    assert "writers" in body["errors"]
    body = assert_problem(send(staff_client, "post", "/api/lab/registration-race",
                               {"technique": "production", "taps": 1, "same_key": "yes", "latency_ms": 0}), 400)
    assert "same_key" in body["errors"]


@pytest.mark.parametrize("delta", [True, "2", 2.0, None, [2]])
def test_adjustment_delta_of_the_wrong_type_is_400(moto_ddb, staff_client, delta):
    body = assert_problem(send(staff_client, "post", "/api/inventory/LANYARD/adjustments", {"delta": delta}), 400)
    assert "delta" in body["errors"]


@pytest.mark.parametrize("reason", [["sold"], 7, {"why": "sold"}])
def test_adjustment_reason_of_the_wrong_type_is_400(moto_ddb, staff_client, reason):
    body = assert_problem(send(staff_client, "post", "/api/inventory/LANYARD/adjustments",
                               {"delta": 1, "reason": reason}), 400)
    assert "reason" in body["errors"]


# --- finding 5: not JSON at all -----------------------------------------------------------------------------

@endpoints()
def test_multipart_to_a_json_endpoint_is_415(moto_ddb, staff_user, method, url, valid):
    client = Client(enforce_csrf_checks=True)  # as in production: the CSRF check reads the multipart body first
    client.force_login(staff_user)
    client.get("/events/")
    token = client.cookies["csrftoken"].value
    multipart = encode_multipart(BOUNDARY, {"title": "x", "capacity": "3"})
    response = client.generic(method.upper(), url, data=multipart, content_type=MULTIPART_CONTENT,
                              HTTP_X_CSRFTOKEN=token, **HEADERS)
    assert_problem(response, 415)


@endpoints()
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_other_content_types_are_415(moto_ddb, staff_client, method, url, valid, content_type):
    assert_problem(send(staff_client, method, url, json.dumps(valid), content_type=content_type), 415)


# --- finding 10: Django's own errors under /api/ are problem+json too ----------------------------------------

def test_unknown_api_route_is_problem_404(moto_ddb, staff_client, client):
    assert_problem(staff_client.get("/api/nowhere"), 404)
    assert_problem(client.post("/api/events/x/y/z", data="{}", content_type="application/json"), 404)
    assert staff_client.get("/nowhere/")["Content-Type"].startswith("text/html")  # pages keep their HTML 404


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_oversized_json_body_is_problem_413(moto_ddb, staff_client):
    assert_problem(send(staff_client, "post", "/api/events", {**EVENT, "description": "x" * 5000}), 413)


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def csrf_client(user) -> tuple[Client, str]:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/events/")
    return client, client.cookies["csrftoken"].value


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_oversized_form_body_under_api_is_problem(moto_ddb, staff_user):
    # The CSRF check reads the form body before any view: RequestDataTooBig is raised inside Django.
    client, token = csrf_client(staff_user)
    response = client.post("/api/events", data="a=" + "x" * 5000, content_type="application/x-www-form-urlencoded",
                           HTTP_X_CSRFTOKEN=token)
    assert_problem(response, 400)


def test_malformed_multipart_under_api_is_problem(moto_ddb, staff_user):
    client, token = csrf_client(staff_user)
    response = client.generic("POST", "/api/events", data=b"--x\r\nnot a part",
                              content_type="multipart/form-data; boundary=", HTTP_X_CSRFTOKEN=token)
    assert_problem(response, 400)


def test_method_not_allowed_is_problem_under_api(moto_ddb, staff_client):
    assert_problem(staff_client.patch("/api/events", data="{}", content_type="application/json"), 405)


# --- finding 10: HEAD answers like GET ----------------------------------------------------------------------

@pytest.mark.parametrize("url", ["/api/events", "/api/me/registrations", "/api/inventory", "/events/", "/inventory/",
                                 "/me/registrations/", "/events/new/", "/inventory/new/", "/inventory/import/",
                                 "/diagnostics/write-metrics/", "/accounts/login/"])
def test_head_answers_like_get_without_a_body(moto_ddb, staff_client, url):
    got, head = staff_client.get(url), staff_client.head(url)
    assert got.status_code == 200, got.content
    assert head.status_code == 200 and head.content == b""
    assert head["Content-Type"] == got["Content-Type"]


def test_head_on_a_post_only_route_is_still_405(moto_ddb, staff_client):
    response = staff_client.head("/api/inventory/LANYARD/adjustments")
    assert response.status_code == 405 and response["Content-Type"] == "application/problem+json"
