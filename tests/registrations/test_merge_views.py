"""The event edit page merges three ways (issue 11 item 1); past starts are confirmed, capacity refusals say why."""

import re
from datetime import UTC, datetime, timedelta

import pytest

from registrations import selectors
from registrations.events import services as event_services
from tests.registrations.helpers import STARTS

INPUT = re.compile(r'<input type="(?:hidden|text|number|datetime-local)" name="(\w+)"(?: value="([^"]*)")?')


@pytest.fixture
def event(moto_ddb):
    return event_services.event_create(title="Chess club", starts_at=STARTS, capacity=4, created_by="staff",
                                 location="Room 1")


def fields(page: str) -> dict:
    values = {name: value for name, value in INPUT.findall(page)}
    values["description"] = re.search(r'<textarea name="description"[^>]*>\s*([^<]*)</textarea>', page).group(1)
    return values


def opened(client, event_id) -> dict:
    return fields(client.get(f"/events/{event_id}/edit/").content.decode())


def colleague_saves(event, **changes):
    values = {"title": "Chess club", "description": "", "location": "Room 1", "starts_at": STARTS, "capacity": 4,
              **changes}
    event_services.event_update(event_id=event.event_id, expected_version=1, updated_by="cy", **values)


def test_a_colleagues_new_room_survives_my_capacity_edit(event, staff_client):
    form = opened(staff_client, event.event_id)
    colleague_saves(event, location="Great Hall")
    response = staff_client.post(f"/events/{event.event_id}/edit/", {**form, "capacity": "8"})
    assert response.status_code == 302
    stored = selectors.event_get(event_id=event.event_id)
    assert (stored.location, int(stored.capacity), int(stored.version)) == ("Great Hall", 8, 3)


def test_a_clash_shows_the_shared_panel_with_readable_dates(event, staff_client):
    form = opened(staff_client, event.event_id)
    colleague_saves(event, location="Great Hall", starts_at=STARTS + timedelta(hours=2))
    response = staff_client.post(f"/events/{event.event_id}/edit/",
                                 {**form, "starts_at": "2027-05-01T10:30", "title": "Chess night"},
                                 HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 409 and "<html" not in page  # htmx-config in base.html swaps a 409's panel
    assert "Someone else saved this event while you were editing" in page
    assert "(version 1 → 2)" in page and "->" not in page
    assert "You opened version 1; it is at version 2 now." in page
    assert page.count('class="merge-clash"') == 1 and "Sat 1 May 2027, 12:00" in page  # theirs, local time, not ISO
    assert "2027-05-01T11:00:00+00:00" not in page.split("<form")[0]
    rearmed = fields(page)
    # Their room kept, my title applied, the clashing start holds mine until decided; based on v2.
    assert (rearmed["location"], rearmed["title"], rearmed["starts_at"], rearmed["version"]) == (
        "Great Hall", "Chess night", "2027-05-01T10:30", "2")
    assert selectors.event_get(event_id=event.event_id).title == "Chess club"
    saved = staff_client.post(f"/events/{event.event_id}/edit/", rearmed, HTTP_HX_REQUEST="true")
    assert saved.status_code == 200 and saved["HX-Redirect"]  # htmx is sent on to the saved page
    stored = selectors.event_get(event_id=event.event_id)
    assert (stored.title, stored.location, stored.starts_at, int(stored.version)) == (
        "Chess night", "Great Hall", datetime(2027, 5, 1, 9, 30, tzinfo=UTC), 3)


def test_lowering_capacity_below_registrations_says_why(ddb, staff_client):
    from tests.registrations.helpers import make_event, register
    event = make_event(capacity=3, title="Robot night")
    register(event.event_id, "s1")
    register(event.event_id, "s2")
    form = opened(staff_client, event.event_id)
    response = staff_client.post(f"/events/{event.event_id}/edit/", {**form, "capacity": "1"})
    page = response.content.decode()
    assert "2 people are registered, so the capacity must be at least 2." in page


def test_a_past_start_must_be_confirmed_on_the_page(moto_ddb, staff_client):
    data = {"title": "Old talk", "description": "", "location": "", "starts_at": "2020-01-01T10:00",
            "capacity": "5", "idempotency_key": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"}
    page = staff_client.post("/events/new/", data).content.decode()
    assert "This start is in the past" in page and 'type="checkbox" name="confirm_past"' in page
    assert selectors.event_list() == ([], [])
    confirmed = staff_client.post("/events/new/", {**data, "confirm_past": "on"})
    assert confirmed.status_code == 302


def test_a_past_start_is_a_field_error_in_the_api_unless_confirmed(moto_ddb, staff_client):
    import json
    body = {"title": "Old talk", "starts_at": "2020-01-01T10:00:00Z", "capacity": 5}
    headers = {"Idempotency-Key": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"}
    refused = staff_client.post("/api/events", data=json.dumps(body), content_type="application/json",
                                headers=headers)
    assert refused.status_code == 400 and "starts_at" in refused.json()["errors"]
    assert "in the past" in refused.json()["detail"]
    created = staff_client.post("/api/events", data=json.dumps({**body, "confirm_past": True}),
                                content_type="application/json", headers=headers)
    assert created.status_code == 201


def test_editing_an_event_that_has_started_needs_no_confirmation_when_the_start_is_kept(moto_ddb, staff_client):
    past = event_services.event_create(title="Past", starts_at=datetime(2020, 1, 1, 10, tzinfo=UTC), capacity=4,
                                 created_by="staff")
    form = opened(staff_client, past.event_id)
    response = staff_client.post(f"/events/{past.event_id}/edit/", {**form, "description": "Slides online"})
    assert response.status_code == 302

