"""The lab's try-it event: one per person, cleaned on every reset, expiring as a backstop (issue 14, #11)."""

import uuid
from datetime import timedelta

import pytest
from django.test import Client

from lab.registration_race import LAB_EVENT_COLLECTION, registration_race, tryit_event_id
from registrations import selectors
from registrations.events import services as event_services
from registrations.events.models import Event
from registrations.models import REGISTRATION_BUCKETS, Registration
from tems.clock import utcnow
from tems.dynamo import boto3_client, current_config
from tems.identity import user_key
from tems.metering import metered
from tests.helpers import assert_invariants_clean


def lab_events() -> list[Event]:
    return list(Event.by_start.query(LAB_EVENT_COLLECTION))


def student_side(user_id: str) -> list[Registration]:
    """The registrations in the person's own partition, scratch ones included (My registrations leaves those out)."""
    return list(Registration.query(Registration.user_pk_for(user_id), Registration.sk.startswith(
        Registration.SK_PREFIX), consistent_read=True))


@pytest.fixture
def lab_client(settings, student, ddb):
    settings.TEMS_DEMO = True  # the lab is open to every logged-in person in demo mode
    client = Client()
    client.force_login(student)
    return client


def test_resets_and_new_sessions_reuse_one_event_and_leave_no_registrations(lab_client, student):
    assert lab_client.get("/lab/").status_code == 200
    event_id = tryit_event_id(user_id=user_key(student))
    response = lab_client.post(f"/events/{event_id}/register/", {"idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 302
    assert len(student_side(user_key(student))) == 1
    for _ in range(3):
        assert lab_client.post("/lab/try-it/reset/").status_code == 302
    again = Client()
    again.force_login(student)  # a new session of the same person
    assert again.get("/lab/").status_code == 200
    assert [event.event_id for event in lab_events()] == [event_id]
    assert student_side(user_key(student)) == []  # the reset took it away with the event
    assert selectors.claim_get(event_id=event_id, user_id=user_key(student)) is None
    assert_invariants_clean()


def test_scratch_events_carry_a_ttl_in_case_the_clean_up_never_runs(lab_client, student, monkeypatch):
    lab_client.get("/lab/")
    (tryit,) = lab_events()
    assert tryit.expires_at is not None
    made = []
    monkeypatch.setattr("lab.registration_race.scratch_delete", lambda **kwargs: made.extend(lab_events()))
    registration_race(technique="production", taps=2, same_key=False, latency_ms=0)
    race_events = [event for event in made if event.event_id != tryit.event_id]
    assert race_events and all(event.expires_at is not None for event in race_events)


def test_an_expired_try_it_event_is_replaced_and_its_leftovers_cleared(lab_client, student):
    lab_client.get("/lab/")
    event_id = tryit_event_id(user_id=user_key(student))
    lab_client.post(f"/events/{event_id}/register/", {"idempotency_key": str(uuid.uuid4())})
    pk, sk = Event.key_for(event_id)  # what DynamoDB's TTL does: the event item alone goes
    boto3_client().delete_item(TableName=current_config().table_name, Key={"PK": {"S": pk}, "SK": {"S": sk}})
    assert lab_client.get("/lab/").status_code == 200
    assert student_side(user_key(student)) == []
    assert [event.event_id for event in lab_events()] == [event_id]
    assert_invariants_clean()


def test_the_try_it_registration_never_shows_in_my_registrations(lab_client, student):
    real = event_services.event_create(title="Open day", starts_at=utcnow() + timedelta(days=3), capacity=5,
                                       created_by="staff")
    lab_client.get("/lab/")
    tryit = tryit_event_id(user_id=user_key(student))
    for event_id in (tryit, real.event_id):
        response = lab_client.post(f"/events/{event_id}/register/", {"idempotency_key": str(uuid.uuid4())})
        assert response.status_code == 302
    assert {r.event_id for r in student_side(user_key(student))} == {tryit, real.event_id}
    assert [r["event_id"] for r in selectors.registration_list(user_id=user_key(student))] == [real.event_id]
    listed = lab_client.get("/api/me/registrations").json()["registrations"]
    assert [r["event_id"] for r in listed] == [real.event_id]
    lab_client.get("/me/registrations/")  # shows, and so ends, the two "You are registered" notices
    page = lab_client.get("/me/registrations/").content.decode()
    assert "Open day" in page and "Lab: try the real Register button" not in page


def test_a_first_visit_makes_the_try_it_event_without_a_query_per_lane_an_event_can_have(lab_client):
    with metered() as first:
        assert lab_client.get("/lab/").status_code == 200
    with metered() as again:
        assert lab_client.get("/lab/").status_code == 200
    # Before making the event, a first visit clears whatever a never-made event could have left: its
    # registrations' buckets, and no lane of a waiting list, since there is no gate to name any.
    assert first.requests["Query"] - again.requests["Query"] <= REGISTRATION_BUCKETS, (first.requests,
                                                                                       again.requests)
