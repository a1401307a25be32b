"""The events API's status codes and problem+json bodies (moto: single-threaded, no races here)."""

import json

import pytest

VALID = {
    "title": "Robotics night",
    "description": "Bring a robot.",
    "location": "Atrium",
    "starts_at": "2027-03-01T18:30:00+00:00",
    "capacity": 12,
}


def post_json(client, url, body, **headers):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.post(url, data=data, content_type="application/json", **headers)


def assert_problem(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["detail"]
    return body


@pytest.fixture
def created(moto_ddb, staff_client):
    response = post_json(staff_client, "/api/events", VALID)
    assert response.status_code == 201, response.content
    return response.json()


def test_staff_creates_event(created, staff_client):
    assert created["title"] == "Robotics night"
    assert created["capacity"] == 12 and created["registered_count"] == 0 and created["waitlist_count"] == 0
    assert created["version"] == 1
    assert created["starts_at"] == "2027-03-01T18:30:00+00:00"
    fetched = staff_client.get(f"/api/events/{created['id']}").json()
    assert fetched == created


def test_list_returns_created_events(created, student_client):
    response = student_client.get("/api/events")
    assert response.status_code == 200
    assert [event["id"] for event in response.json()["events"]] == [created["id"]]


def test_anonymous_gets_401(moto_ddb, client):
    assert_problem(client.get("/api/events"), 401)
    assert_problem(post_json(client, "/api/events", VALID), 401)


def test_student_cannot_create(moto_ddb, student_client):
    assert_problem(post_json(student_client, "/api/events", VALID), 403)
    assert student_client.get("/api/events").json()["events"] == []


def test_unknown_event_is_404(moto_ddb, student_client):
    body = assert_problem(student_client.get("/api/events/nope"), 404)
    assert "nope" in body["detail"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"capacity": 0}, "capacity"),
        ({"capacity": -5}, "capacity"),
        ({"capacity": "many"}, "capacity"),
        ({"title": "x" * 201}, "title"),
        ({"title": "   "}, "title"),
        ({"starts_at": "next tuesday"}, "starts_at"),
        ({"starts_at": "2027-02-30T10:00:00Z"}, "starts_at"),
    ],
)
def test_invalid_fields_are_400_naming_the_field(moto_ddb, staff_client, change, field):
    body = assert_problem(post_json(staff_client, "/api/events", {**VALID, **change}), 400)
    assert field in body["errors"]
    assert field in body["detail"]
    assert staff_client.get("/api/events").json()["events"] == []  # nothing half-written


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", "", '"a string"'])
def test_malformed_body_is_400(moto_ddb, staff_client, raw):
    assert_problem(post_json(staff_client, "/api/events", raw), 400)


def test_missing_fields_are_named(moto_ddb, staff_client):
    body = assert_problem(post_json(staff_client, "/api/events", {}), 400)
    assert {"title", "starts_at", "capacity"} <= set(body["errors"])


def test_wrong_method_is_405(moto_ddb, staff_client):
    response = staff_client.delete("/api/events")
    assert_problem(response, 405)
    assert response["Allow"] == "GET, POST"


def test_csrf_is_enforced_for_api_writes(moto_ddb, csrf_staff_client):
    body = assert_problem(post_json(csrf_staff_client, "/api/events", VALID), 403)
    assert "CSRF" in body["detail"]
    csrf_staff_client.get("/events/")  # a page sets the csrftoken cookie, as in a browser
    token = csrf_staff_client.cookies["csrftoken"].value
    response = post_json(csrf_staff_client, "/api/events", VALID, HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 201
