"""The events API's status codes and problem+json bodies (moto: single-threaded, no races here)."""

import json
import uuid

import pytest
from django.test import Client

from tests.helpers import assert_invariants_clean, assert_problem
from tests.registrations.helpers import make_event

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



@pytest.fixture
def created(moto_ddb, staff_client):
    response = post_json(staff_client, "/api/events", VALID, HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
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
    response = post_json(csrf_staff_client, "/api/events", VALID, HTTP_X_CSRFTOKEN=token,
                         HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    assert response.status_code == 201


# --- registrations API (DynamoDB Local: every write is a transaction) -----------------------------------------


def register_via_api(client, event_id, key=None, **headers):
    if key is not None:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(f"/api/events/{event_id}/registrations", **headers)


@pytest.fixture
def open_event(ddb):
    return make_event(capacity=1)


def test_registration_is_201_and_the_same_key_replays_it_exactly(open_event, student_client):
    key = str(uuid.uuid4())
    first = register_via_api(student_client, open_event.event_id, key)
    assert first.status_code == 201, first.content
    body = first.json()
    assert set(body) == {"registration_id", "event_id", "user", "status", "position", "ticket_url", "qr_url",
                         "created_at"}
    assert (body["event_id"], body["user"], body["status"], body["position"]) == (
        open_event.event_id, "student1", "confirmed", None)
    assert body["qr_url"] == f"/registrations/{body['registration_id']}/qr.svg" and "Idempotent-Replayed" not in first
    again = register_via_api(student_client, open_event.event_id, key)
    assert again.status_code == 201 and again.content == first.content
    assert again["Idempotent-Replayed"] == "true"
    assert_invariants_clean()


def test_another_key_while_registered_is_200_with_the_existing_registration(open_event, student_client):
    first = register_via_api(student_client, open_event.event_id, str(uuid.uuid4())).json()
    other = register_via_api(student_client, open_event.event_id, str(uuid.uuid4()))
    assert other.status_code == 200
    assert other.json()["registration_id"] == first["registration_id"]


def test_full_event_answers_201_waitlisted_with_position(open_event, student_client, other_student):
    register_via_api(student_client, open_event.event_id, str(uuid.uuid4()))
    client = Client()
    client.force_login(other_student)
    response = register_via_api(client, open_event.event_id, str(uuid.uuid4()))
    assert response.status_code == 201
    assert (response.json()["status"], response.json()["position_at_most"]) == ("waitlisted", 1)


@pytest.mark.parametrize("key", [None, "", "not a key", '"unterminated', "k" * 256])
def test_missing_or_malformed_key_is_400(open_event, student_client, key):
    body = assert_problem(register_via_api(student_client, open_event.event_id, key), 400)
    assert "Idempotency-Key" in body["detail"]
    assert student_client.get("/api/me/registrations").json()["registrations"] == []


def test_key_reused_for_another_event_is_422(ddb, student_client):
    one, two = make_event(), make_event()
    key = str(uuid.uuid4())
    assert register_via_api(student_client, one.event_id, key).status_code == 201
    assert_problem(register_via_api(student_client, two.event_id, key), 422)
    assert [r["event_id"] for r in student_client.get("/api/me/registrations").json()["registrations"]] == [
        one.event_id]


def test_registering_for_an_unknown_event_is_404(ddb, student_client):
    assert_problem(register_via_api(student_client, "ghost", str(uuid.uuid4())), 404)


def test_same_key_from_another_user_gets_their_own_registration(open_event, student_client, other_student):
    key = str(uuid.uuid4())
    mine = register_via_api(student_client, open_event.event_id, key).json()
    client = Client()
    client.force_login(other_student)
    theirs = register_via_api(client, open_event.event_id, key)
    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs
    assert theirs.json()["user"] == "student2" and theirs.json()["registration_id"] != mine["registration_id"]


def test_anonymous_cannot_register(open_event, client):
    assert_problem(register_via_api(client, open_event.event_id, str(uuid.uuid4())), 401)


def test_busy_is_503_with_retry_after(open_event, student_client, monkeypatch):
    from tems.transactions import LabelledTransaction, Reason, TransactionCancelled

    def always_conflict(self):
        raise TransactionCancelled({"claim": Reason("TransactionConflict", None, None)}, cause=None)

    monkeypatch.setattr(LabelledTransaction, "commit", always_conflict)
    monkeypatch.setattr("registrations.write_rules.CONFLICT_MAX_DELAY", 0)
    response = register_via_api(student_client, open_event.event_id, str(uuid.uuid4()))
    body = assert_problem(response, 503)
    assert response["Retry-After"] == "1" and body["code"] == "busy"


def test_my_registrations_lists_mine_only(ddb, student_client, other_student):
    event = make_event(capacity=5, title="Chess")
    created = register_via_api(student_client, event.event_id, str(uuid.uuid4())).json()
    client = Client()
    client.force_login(other_student)
    register_via_api(client, event.event_id, str(uuid.uuid4()))
    listed = student_client.get("/api/me/registrations").json()["registrations"]
    assert [(r["registration_id"], r["event_title"], r["status"]) for r in listed] == [
        (created["registration_id"], "Chess", "confirmed")]


def cancel_via_api(client, registration_id, key):
    return client.delete(f"/api/registrations/{registration_id}", HTTP_IDEMPOTENCY_KEY=key)


def test_cancel_is_200_replayable_and_promotes(open_event, student_client, other_student):
    mine = register_via_api(student_client, open_event.event_id, str(uuid.uuid4())).json()
    client = Client()
    client.force_login(other_student)
    register_via_api(client, open_event.event_id, str(uuid.uuid4()))
    key = str(uuid.uuid4())
    response = cancel_via_api(student_client, mine["registration_id"], key)
    assert response.status_code == 200
    assert response.json() == {"registration_id": mine["registration_id"], "event_id": open_event.event_id,
                               "status": "cancelled"}
    again = cancel_via_api(student_client, mine["registration_id"], key)
    assert again.status_code == 200 and again.content == response.content
    assert again["Idempotent-Replayed"] == "true"
    assert client.get("/api/me/registrations").json()["registrations"][0]["status"] == "confirmed"
    # A deliberate new cancel of something already gone is a plain 404.
    assert_problem(cancel_via_api(student_client, mine["registration_id"], str(uuid.uuid4())), 404)
    assert_invariants_clean()


def test_cancelling_someone_elses_registration_is_404(open_event, student_client, other_student):
    mine = register_via_api(student_client, open_event.event_id, str(uuid.uuid4())).json()
    client = Client()
    client.force_login(other_student)
    assert_problem(cancel_via_api(client, mine["registration_id"], str(uuid.uuid4())), 404)
    assert student_client.get("/api/me/registrations").json()["registrations"][0]["status"] == "confirmed"


def test_cancel_needs_a_key(open_event, student_client):
    mine = register_via_api(student_client, open_event.event_id, str(uuid.uuid4())).json()
    assert_problem(student_client.delete(f"/api/registrations/{mine['registration_id']}"), 400)


def test_registration_api_enforces_csrf(open_event, student):
    client = Client(enforce_csrf_checks=True)
    client.force_login(student)
    assert_problem(register_via_api(client, open_event.event_id, str(uuid.uuid4())), 403)
