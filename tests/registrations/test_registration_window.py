"""Registration opens and closes when staff say: decided by the seat's (and the waiting-list ticket's) own condition,
copied onto every seat shard by the event's create and edit, never by a read before the write."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from registrations import selectors
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.seating import shards
from registrations.seating.models import SeatShard
from tests.registrations.helpers import make_event, register

STARTS = datetime(2027, 5, 1, 9, tzinfo=UTC)
OPENS = datetime(2027, 4, 1, 9, tzinfo=UTC)
CLOSES = datetime(2027, 4, 20, 9, tzinfo=UTC)


def windowed(capacity: int = 5):
    return make_event(capacity=capacity, title="Ball", starts_at=STARTS, registration_opens_at=OPENS,
                      registration_closes_at=CLOSES)


def test_refused_before_it_opens_and_after_it_closes_admitted_between(ddb):
    event = windowed()
    with pytest.raises(RegistrationError) as early:
        register(event.event_id, "early", now=OPENS - timedelta(seconds=1))
    assert early.value.status == 409 and early.value.extra["reason"] == "registration_not_open"
    assert "Registration opens on Thu 1 Apr 2027, 09:00 UTC" in early.value.detail
    register(event.event_id, "in-time", now=OPENS)
    with pytest.raises(RegistrationError) as late:
        register(event.event_id, "late", now=CLOSES)
    assert late.value.extra["reason"] == "registration_closed" and "Registration closed on" in late.value.detail
    assert selectors.claim_get(event_id=event.event_id, user_id="early") is None
    assert selectors.claim_get(event_id=event.event_id, user_id="late") is None


def test_the_waiting_list_is_closed_by_the_window_too(ddb):
    event = windowed(capacity=1)
    register(event.event_id, "first", now=OPENS)
    register(event.event_id, "second", now=OPENS + timedelta(minutes=1))  # joins the waiting list
    with pytest.raises(RegistrationError, match="Registration closed on"):
        register(event.event_id, "third", now=CLOSES + timedelta(minutes=1))


def test_the_window_is_the_seats_own_condition(ddb, monkeypatch):
    """Broken variant: the seat's condition without the window. The early tap is then admitted, so nothing but the
    write's condition refuses it (no read decides)."""
    event = windowed()
    monkeypatch.setattr(shards, "admitting", lambda created_at: (SeatShard.starts_at > created_at)
                        & SeatShard.cancelled_at.does_not_exist())
    register(event.event_id, "early", now=OPENS - timedelta(days=1))
    assert selectors.claim_get(event_id=event.event_id, user_id="early") is not None


def test_an_edit_moves_the_window_on_every_shard(ddb):
    event = make_event(capacity=120, title="Big fair", starts_at=STARTS)  # three shards
    event_services.event_update(event_id=event.event_id, expected_version=1, title="Big fair", description="",
                                location="", starts_at=STARTS, capacity=120, updated_by="staff",
                                registration_closes_at=CLOSES)
    stored = shards.shards_get(event_id=event.event_id, count=3)
    assert [shard.closes_at for shard in stored] == [CLOSES] * 3
    with pytest.raises(RegistrationError, match="Registration closed on"):
        register(event.event_id, "late", now=CLOSES + timedelta(hours=1))
    event_services.event_update(event_id=event.event_id, expected_version=2, title="Big fair", description="",
                                location="", starts_at=STARTS, capacity=120, updated_by="staff")
    assert all(shard.closes_at is None for shard in shards.shards_get(event_id=event.event_id, count=3))
    register(event.event_id, "late", now=CLOSES + timedelta(hours=1))


def test_api_answers_problem_json_and_page_says_not_open_yet(ddb, student_client):
    future = datetime.now(UTC) + timedelta(days=30)
    event = make_event(capacity=5, title="Later", starts_at=future + timedelta(days=5), registration_opens_at=future)
    response = student_client.post(f"/api/events/{event.event_id}/registrations", data=json.dumps({}),
                                   content_type="application/json",
                                   headers={"Idempotency-Key": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4e"})
    assert response.status_code == 409 and response["Content-Type"] == "application/problem+json"
    assert response.json()["reason"] == "registration_not_open" and "opens_at" in response.json()
    page = student_client.get(f"/events/{event.event_id}/").content.decode()
    assert "Registration is not open yet" in page and "register-form" not in page


def test_form_refuses_a_window_that_closes_after_the_start(ddb, staff_client):
    response = staff_client.post("/events/new/", {
        "title": "Gala", "starts_at": "2031-05-01T19:00", "capacity": "10", "time_zone": "Europe/London",
        "registration_closes_at": "2031-05-02T10:00", "idempotency_key": "5b0f2a8e-6c1d-4e3a-9b7f-2d4c6e8a0b1c"})
    assert response.status_code == 200 and "Registration closes at the start at the latest" in response.content.decode()
