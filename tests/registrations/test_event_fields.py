"""The event's details beyond its title, time and seats: end, time zone, venue and map, online link, category,
organizer and "public", through the form, the API, the event's page and its calendar file."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from icalendar import Calendar

from registrations import selectors
from tems.identity import user_key
from tests.registrations.helpers import make_event, register


def test_times_are_typed_and_shown_in_the_events_zone(ddb, staff_client):
    response = staff_client.post("/events/new/", {
        "title": "Transatlantic call", "starts_at": "2031-05-01T19:00", "ends_at": "2031-05-01T20:30",
        "time_zone": "America/New_York", "capacity": "10", "category": "talk", "organizer": "  Physics   Society ",
        "location": "Room 4", "map_url": "https://maps.example.org/room4", "online_url": "https://meet.example.org/x",
        "public": "on", "idempotency_key": "6f1d2c3b-4a5e-4f60-8b7a-9c0d1e2f3a4b"})
    assert response.status_code == 302, response.content.decode()
    event_id = response["Location"].rstrip("/").rsplit("/", 1)[-1]
    event = selectors.event_get(event_id=event_id)
    assert event.starts_at == datetime(2031, 5, 1, 23, 0, tzinfo=UTC)  # 19:00 in New York (summer time)
    assert event.ends_at == datetime(2031, 5, 2, 0, 30, tzinfo=UTC)
    assert (event.time_zone, event.category, event.organizer, event.public) == (
        "America/New_York", "talk", "Physics Society", True)
    page = staff_client.get(f"/events/{event_id}/").content.decode()
    assert "19:00 EDT" in page and "20:30 EDT" in page and "https://maps.example.org/room4" in page
    # An event without a team shows the typed organizer as its one organizer; staff see the link.
    assert "Talk" in page and '"organizer">Physics Society<' in page and "meet.example.org/x" in page
    edit = staff_client.get(f"/events/{event_id}/edit/").content.decode()
    assert 'value="2031-05-01T19:00"' in edit and 'value="America/New_York" selected' in edit


def test_the_end_must_not_come_before_the_start(ddb, staff_client):
    response = staff_client.post("/events/new/", {
        "title": "Backwards", "starts_at": "2031-05-01T19:00", "ends_at": "2031-05-01T18:00", "capacity": "10",
        "idempotency_key": "7a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"})
    assert response.status_code == 200 and "The end must not be before the start" in response.content.decode()


def test_api_creates_with_the_new_fields_and_shows_the_online_link_to_staff_only(ddb, staff_client, student_client):
    response = staff_client.post("/api/events", data=json.dumps({
        "title": "Hack night", "starts_at": "2031-06-01T18:00:00+00:00", "ends_at": "2031-06-01T23:00:00+00:00",
        "capacity": 30, "category": "workshop", "organizer": "Code Club", "online_url": "https://meet.example.org/h",
        "public": True}), content_type="application/json",
        headers={"Idempotency-Key": "8b3c4d5e-6f70-4b8c-9d0e-1f2a3b4c5d6e"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["ends_at"] == "2031-06-01T23:00:00+00:00" and body["online_url"] == "https://meet.example.org/h"
    seen = student_client.get(f"/api/events/{body['id']}").json()
    assert seen["online"] is True and "online_url" not in seen and seen["organizer"] == "Code Club"
    bad = staff_client.post("/api/events", data=json.dumps({
        "title": "X", "starts_at": "2031-06-01T18:00:00+00:00", "capacity": 3, "category": "party",
        "map_url": "javascript:alert(1)"}), content_type="application/json",
        headers={"Idempotency-Key": "9c4d5e6f-7081-4c9d-8e1f-2a3b4c5d6e7f"})
    assert bad.status_code == 400 and set(bad.json()["errors"]) == {"category", "map_url"}


def test_the_calendar_file_ends_when_the_event_ends(ddb, student, student_client):
    event = make_event(title="Long lab", starts_at=datetime(2031, 5, 1, 9, tzinfo=UTC),
                       ends_at=datetime(2031, 5, 1, 17, tzinfo=UTC))
    data = register(event.event_id, user_key(student)).data
    entry = Calendar.from_ical(student_client.get(
        f"/registrations/{data['registration_id']}/calendar.ics").content).walk("VEVENT")[0]
    assert entry.decoded("dtend") == datetime(2031, 5, 1, 17, tzinfo=UTC)
