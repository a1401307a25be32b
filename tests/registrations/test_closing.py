"""Registration closes at the event's start (issue 11 item 6): decided by the seat-taking write's condition."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from registrations import selectors
from registrations.errors import RegistrationError
from tests.registrations.helpers import make_event, register


def test_registration_is_refused_from_the_start_time_by_the_write_itself(ddb, staff_client):
    event = make_event(capacity=1, title="Talk", starts_at=datetime(2027, 5, 1, 9, tzinfo=UTC))
    register(event.event_id, "early", now=datetime(2027, 5, 1, 8, 59, tzinfo=UTC))
    with pytest.raises(RegistrationError) as refused:  # full, so this would have joined the waiting list
        register(event.event_id, "late", now=datetime(2027, 5, 1, 9, 0, tzinfo=UTC))
    assert refused.value.status == 409 and "Registration closed when the event started" in refused.value.detail
    assert selectors.claim_get(event_id=event.event_id, user_id="late") is None
    with pytest.raises(RegistrationError, match="Registration closed"):
        register(event.event_id, "later", now=datetime(2027, 5, 2, tzinfo=UTC))


def test_api_and_page_say_registration_closed_for_a_started_event(ddb, student_client):
    event = make_event(capacity=5, title="Yesterday", starts_at=datetime.now(UTC) - timedelta(days=1))
    response = student_client.post(f"/api/events/{event.event_id}/registrations", data=json.dumps({}),
                                   content_type="application/json",
                                   headers={"Idempotency-Key": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"})
    assert response.status_code == 409 and response["Content-Type"] == "application/problem+json"
    assert "Registration closed" in response.json()["detail"]
    assert response.json()["reason"] == "registration_closed"
    page = student_client.get(f"/events/{event.event_id}/").content.decode()
    assert "Registration closed" in page and ">Register</button>" not in page and "register-form" not in page
