"""A door volunteer works the door of the events they are assigned to, and nothing else: check-in there, refused
at another event's door and on every other staff route of their own event; their door shows the answers marked
"show at the door" and no other. On DynamoDB Local: a check-in is a transaction."""

from __future__ import annotations

import json
import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client

from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import Question
from tems.models import DoorAssignment, Membership, Team
from tems.permissions import DOOR_VOLUNTEER
from tests.helpers import assert_problem
from tests.registrations.helpers import make_event

DIET = Question(id="d1e7d1e7", label="Diet", kind="single", required=True, choices=("none", "vegan"), door=True)
NOTE = Question(id="0a0b0c0d", label="Medical notes", kind="text")


@pytest.fixture(autouse=True)
def cold_questions():
    question_sets.known.reset()
    yield
    question_sets.known.reset()


@pytest.fixture
def door(ddb, student_client):
    team = Team.objects.create(id="alpha", name="Alpha Society")
    volunteer = User.objects.create_user("door-1", password="pw", first_name="Dee")
    membership = Membership.objects.create(user=volunteer, team=team, role=DOOR_VOLUNTEER)
    events = {}
    for name in ("a", "b"):
        events[name] = make_event(team="alpha", title=f"Event {name}")
        question_services.questions_update(event_id=events[name].event_id, expected_version=0,
                                           questions=(DIET, NOTE), updated_by="staff")
    DoorAssignment.objects.create(membership=membership, event_id=events["a"].event_id)
    tickets = {}
    for name, event in events.items():
        response = student_client.post(
            f"/api/events/{event.event_id}/registrations", content_type="application/json",
            data=json.dumps({"answers": {DIET.id: "vegan", NOTE.id: "asthma inhaler"}}),
            HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
        assert response.status_code == 201, response.content
        tickets[name] = response.json()
    client = Client()
    client.force_login(volunteer)
    return client, events, tickets


def scan(client, event_id: str, ticket_url: str):
    return client.post(f"/api/events/{event_id}/checkins", data=json.dumps({"ticket": ticket_url, "door": "A"}),
                       content_type="application/json", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))


def test_check_in_at_their_event_and_refused_at_another(door):
    client, events, tickets = door
    at_a = scan(client, events["a"].event_id, tickets["a"]["ticket_url"])
    assert at_a.status_code == 201, at_a.content
    assert at_a.json()["status"] == "checked_in" and at_a.json()["checked_in_by"] == "door-1"
    assert_problem(scan(client, events["b"].event_id, tickets["b"]["ticket_url"]), 403)
    assert client.get(f"/events/{events['b'].event_id}/door/").status_code == 403
    assert client.get(f"/events/{events['a'].event_id}/door/").status_code == 200


def test_every_other_staff_route_of_their_own_event_is_refused(door):
    client, events, _ = door
    event_id = events["a"].event_id
    for url in ("attendees.csv", "attendees/", "messages/", "cancel/", "edit/", "questions/", "retention/",
                "doors/"):
        assert client.get(f"/events/{event_id}/{url}").status_code == 403, url
    assert client.post(f"/events/{event_id}/cancel/").status_code == 403
    assert client.post(f"/events/{event_id}/edit/").status_code == 403
    for method, url in (("get", "attendees"), ("get", "messages"), ("post", "messages"), ("post", "cancel"),
                        ("put", "questions")):
        assert_problem(getattr(client, method)(f"/api/events/{event_id}/{url}"), 403)
    # Their event page links to the door and to nothing they may not open.
    page = client.get(f"/events/{event_id}/").content.decode()
    assert f"/events/{event_id}/door/" in page
    assert "attendees" not in page and "Edit event" not in page and "Cancel event" not in page


def test_the_door_shows_only_the_answers_marked_for_it(door):
    client, events, tickets = door
    event_id, registration_id = events["a"].event_id, tickets["a"]["registration_id"]
    answers = client.get(f"/api/events/{event_id}/door-answers/{registration_id}")
    assert answers.status_code == 200
    assert answers.json() == {"answers": [{"label": "Diet", "value": "vegan"}]}
    assert "asthma" not in answers.content.decode()
    assert_problem(client.get(f"/api/events/{events['b'].event_id}/door-answers/{tickets['b']['registration_id']}"),
                   403)


def test_a_scanned_ticket_url_takes_them_to_the_door_only_where_they_work_it(door):
    client, events, tickets = door
    path_a = tickets["a"]["ticket_url"].split("://", 1)[1].split("/", 1)[1]
    path_b = tickets["b"]["ticket_url"].split("://", 1)[1].split("/", 1)[1]
    assert client.get(f"/{path_a}")["Location"].startswith(f"/events/{events['a'].event_id}/door/#ticket=")
    assert client.get(f"/{path_b}")["Location"] == f"/events/{events['b'].event_id}/"
