"""PUT /api/events/<id>: an edit at the version If-Match names (412 with the stored version, 428 without), where a
field left out keeps its value; and the edit page, where a field left out keeps its value too."""

from __future__ import annotations

import json

import pytest

from registrations import selectors
from tests.helpers import assert_problem
from tests.registrations.helpers import make_event


@pytest.fixture
def event(moto_ddb):
    return make_event(capacity=10, title="Chess club", location="Room 1", offer_hours=12, reminder_hours=6)


def put(client, event_id: str, body, **headers):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.put(f"/api/events/{event_id}", data=data, content_type="application/json", **headers)


def test_get_sends_the_version_as_etag(event, staff_client):
    response = staff_client.get(f"/api/events/{event.event_id}")
    assert response["ETag"] == '"1"' and response.json()["version"] == 1


def test_a_partial_edit_keeps_the_fields_left_out(event, staff_client):
    response = put(staff_client, event.event_id, {"capacity": 20}, HTTP_IF_MATCH='"1"')
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["capacity"], body["title"], body["location"]) == (20, "Chess club", "Room 1")
    assert (body["offer_hours"], body["reminder_hours"], body["version"]) == (12, 6, 2)
    assert response["ETag"] == '"2"'
    stored = selectors.event_get(event_id=event.event_id)
    assert int(stored.offer_hours) == 12 and int(stored.reminder_hours) == 6


def test_offer_mode_is_turned_off_only_when_asked(event, staff_client):
    assert put(staff_client, event.event_id, {"offer_hours": 0}, HTTP_IF_MATCH='"1"').json()["offer_hours"] == 0
    assert selectors.event_get(event_id=event.event_id).offer_hours is None


def test_without_if_match_is_428(event, staff_client):
    body = assert_problem(put(staff_client, event.event_id, {"capacity": 20}), 428)
    assert body["code"] == "precondition_required"


def test_a_stale_version_is_412_with_the_stored_one(event, staff_client):
    put(staff_client, event.event_id, {"title": "Theirs"}, HTTP_IF_MATCH='"1"')
    body = assert_problem(put(staff_client, event.event_id, {"title": "Mine"}, HTTP_IF_MATCH='"1"'), 412)
    assert body["code"] == "precondition_failed" and body["version"] == 2
    assert body["current"]["title"] == "Theirs"
    assert selectors.event_get(event_id=event.event_id).title == "Theirs"


@pytest.mark.parametrize("if_match", ['W/"1"', "1", '"1", "2"', '"' + "9" * 40 + '"', "*"])
def test_a_malformed_if_match_is_400(event, staff_client, if_match):
    assert_problem(put(staff_client, event.event_id, {"capacity": 20}, HTTP_IF_MATCH=if_match), 400)


@pytest.mark.parametrize("body", [{"capacity": "many"}, {"capacity": 10**50}, {"title": ""}, {"title": ["x"]},
                                  {"starts_at": "not a date"}, {"offer_hours": 10**6}, {"title": "a\u0000b"},
                                  "[1, 2]", "{", b"\xff"])
def test_hostile_bodies_are_400(event, staff_client, body):
    assert_problem(put(staff_client, event.event_id, body, HTTP_IF_MATCH='"1"'), 400)
    assert int(selectors.event_get(event_id=event.event_id).version) == 1


def test_students_and_unknown_events(event, student_client, staff_client):
    assert_problem(put(student_client, event.event_id, {"capacity": 20}, HTTP_IF_MATCH='"1"'), 403)
    assert_problem(put(staff_client, "no-such-event", {"capacity": 20}, HTTP_IF_MATCH='"1"'), 404)


# --- the edit page ----------------------------------------------------------------------------------------------

def test_an_edit_form_without_the_offer_window_keeps_offer_mode(event, staff_client):
    page = staff_client.get(f"/events/{event.event_id}/edit/").content.decode()
    base = page.split('name="base" value="', 1)[1].split('"', 1)[0]
    posted = {"title": "Chess club", "description": "", "location": "Room 2", "starts_at": "2027-05-01T09:00",
              "capacity": "10", "version": "1", "base": base}  # no offer_hours, no reminder_hours
    response = staff_client.post(f"/events/{event.event_id}/edit/", posted)
    assert response.status_code == 302, response.content.decode()[:2000]
    stored = selectors.event_get(event_id=event.event_id)
    assert stored.location == "Room 2" and int(stored.offer_hours) == 12 and int(stored.reminder_hours) == 6
