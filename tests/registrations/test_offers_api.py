"""The offers API: ``POST /api/offers/<id>/accept`` and ``/decline`` with an Idempotency-Key, offers listed in
``/api/me/registrations``, problem+json refusals."""

import uuid
from datetime import timedelta

import pytest
from django.test import Client

from registrations import selectors, services
from registrations.events import services as event_services
from registrations.offers import services as offers
from tems.clock import utcnow
from tems.identity import user_key
from tests.helpers import assert_invariants_clean, assert_problem
from tests.registrations.helpers import make_event, register


@pytest.fixture
def offered(ddb, student, other_student):
    """``student`` holds an offer of the one seat of an event in offer mode; ``other_student`` waits behind."""
    event = make_event(capacity=1, offer_hours=24)
    holder = register(event.event_id, "holder").data["registration_id"]
    mine = register(event.event_id, user_key(student), user_name=student.get_username()).data["registration_id"]
    register(event.event_id, user_key(other_student), user_name=other_student.get_username())
    services.registration_cancel(user_id="holder", registration_id=holder)
    return mine


def post(client, url, key=None):
    return client.post(url, HTTP_IDEMPOTENCY_KEY=key or str(uuid.uuid4()))


def test_the_offer_is_listed_with_where_to_answer(offered, student_client):
    row = student_client.get("/api/me/registrations").json()["registrations"][0]
    assert row["status"] == "offered"
    assert row["offer"]["offer_id"] == offered
    assert row["offer"]["accept_url"] == f"/api/offers/{offered}/accept"
    assert row["offer"]["decline_url"] == f"/api/offers/{offered}/decline"


def test_accept_is_200_and_replayed_per_key(offered, student_client):
    key = str(uuid.uuid4())
    first = post(student_client, f"/api/offers/{offered}/accept", key)
    assert first.status_code == 200, first.content
    assert first.json()["status"] == "confirmed" and first.json()["state"] == "accepted"
    again = post(student_client, f"/api/offers/{offered}/accept", key)
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    # Another tap of the same button (a new key) gets the same answer: the seat is theirs.
    assert post(student_client, f"/api/offers/{offered}/accept").json() == first.json()
    assert student_client.get("/api/me/registrations").json()["registrations"][0]["status"] == "confirmed"
    assert_problem(post(student_client, f"/api/offers/{offered}/decline"), 409)
    assert_invariants_clean()


def test_a_late_accept_is_409_offer_expired_and_the_next_is_offered(offered, student_client, other_student,
                                                                     monkeypatch):
    later = utcnow() + timedelta(hours=25)
    monkeypatch.setattr(offers, "utcnow", lambda: later)
    response = post(student_client, f"/api/offers/{offered}/accept")
    assert_problem(response, 409)
    assert response.json()["code"] == "offer_expired"
    other = Client()
    other.force_login(other_student)
    assert other.get("/api/me/registrations").json()["registrations"][0]["status"] == "offered"


def test_decline_passes_the_seat_on(offered, student_client, other_student):
    response = post(student_client, f"/api/offers/{offered}/decline")
    assert response.status_code == 200 and response.json()["state"] == "declined"
    assert student_client.get("/api/me/registrations").json()["registrations"] == []
    other = Client()
    other.force_login(other_student)
    assert other.get("/api/me/registrations").json()["registrations"][0]["status"] == "offered"
    assert_invariants_clean()


def test_someone_elses_offer_is_404_and_a_key_is_required(offered, student_client, other_student):
    other = Client()
    other.force_login(other_student)
    assert_problem(post(other, f"/api/offers/{offered}/accept"), 404)
    assert_problem(student_client.post(f"/api/offers/{offered}/accept"), 400)


def test_staff_choose_the_mode_at_creation_and_edit(ddb, staff_client):
    body = {"title": "Lab tour", "starts_at": "2030-01-01T10:00:00+00:00", "capacity": 5, "offer_hours": 24}
    created = staff_client.post("/api/events", body, content_type="application/json",
                                HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    assert created.status_code == 201 and created.json()["offer_hours"] == 24
    event_id = created.json()["id"]
    refused = staff_client.post("/api/events", {**body, "offer_hours": -1}, content_type="application/json",
                                HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    assert refused.status_code == 400 and "offer_hours" in refused.json()["errors"]
    automatic = staff_client.post("/api/events", {**body, "offer_hours": None}, content_type="application/json",
                                  HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    assert automatic.json()["offer_hours"] == 0
    event = event_services.event_create(title="x", starts_at=utcnow() + timedelta(days=3), capacity=2, created_by="s",
                                  offer_hours=12)
    event_services.event_update(event_id=event.event_id, expected_version=1, title="x", description="", location="",
                          starts_at=event.starts_at, capacity=2, updated_by="s", offer_hours=0)
    assert selectors.event_get(event_id=event.event_id).offer_hours is None
    assert selectors.event_get(event_id=event_id).offer_hours == 24
