"""The door's API: statuses, problem+json refusals and replays, through Django on DynamoDB Local."""

from __future__ import annotations

import json
import uuid

import pytest

from registrations import services as registration_services
from tests.helpers import assert_problem
from tests.registrations.helpers import make_event, register


def post_scan(client, event_id: str, body, key: str | None = None):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    headers = {} if key is False else {"HTTP_IDEMPOTENCY_KEY": key or str(uuid.uuid4())}
    return client.post(f"/api/events/{event_id}/checkins", data=data, content_type="application/json", **headers)


@pytest.fixture
def event(ddb):
    return make_event(capacity=1)


def test_first_scan_201_then_replay_then_already_checked_in(event, staff_client):
    ticket = register(event.event_id, "ann").data["ticket_url"]
    key = str(uuid.uuid4())
    first = post_scan(staff_client, event.event_id, {"ticket": ticket, "door": "B"}, key)
    assert first.status_code == 201, first.content
    body = first.json()
    assert (body["status"], body["user"], body["checked_in_by"], body["door"]) == ("checked_in", "ann", "staffer", "B")
    assert "Idempotent-Replayed" not in first
    replay = post_scan(staff_client, event.event_id, {"ticket": ticket, "door": "B"}, key)
    assert replay.status_code == 201 and replay.content == first.content
    assert replay["Idempotent-Replayed"] == "true"
    # The token alone (a typed ticket code) is the same ticket.
    token = ticket.rstrip("/").rsplit("/", 1)[1]
    later = post_scan(staff_client, event.event_id, {"ticket": token, "door": "C"})
    assert later.status_code == 200
    assert later.json() == {**body, "status": "already_checked_in"}
    stats = staff_client.get(f"/api/events/{event.event_id}/checkins/stats")
    assert stats.status_code == 200 and stats.json() == {"confirmed": 1, "checked_in": 1}


def test_refusals_are_problems_with_their_reason(event, staff_client, student_client):
    confirmed = register(event.event_id, "ann").data
    waitlisted = register(event.event_id, "bob").data
    other = make_event(capacity=3)
    elsewhere = register(other.event_id, "cat").data
    cancelled = register(other.event_id, "dan").data
    registration_services.registration_cancel(user_id="dan", registration_id=cancelled["registration_id"])

    assert_problem(post_scan(staff_client, event.event_id, {"ticket": "not a ticket"}), 400)
    url = confirmed["ticket_url"]
    at = url.index("/tickets/") + len("/tickets/") + 5  # a character of the signed payload
    tampered = url[:at] + ("A" if url[at] != "A" else "B") + url[at + 1:]
    assert assert_problem(post_scan(staff_client, event.event_id, {"ticket": tampered}), 400)["reason"] == "forged"
    assert_problem(post_scan(staff_client, event.event_id, {}), 400)
    assert_problem(post_scan(staff_client, event.event_id, "[1, 2"), 400)
    assert_problem(post_scan(staff_client, event.event_id, {"ticket": confirmed["ticket_url"], "door": 7}), 400)
    # Lone surrogates (valid JSON escapes, not valid text) in either field are a 400, not a 500 from botocore.
    assert_problem(post_scan(staff_client, event.event_id,
                             '{"ticket": "' + confirmed["ticket_url"] + '", "door": "\\ud800"}'), 400)
    assert_problem(post_scan(staff_client, event.event_id, '{"ticket": "\\udfff"}'), 400)
    assert_problem(post_scan(staff_client, event.event_id, {"ticket": confirmed["ticket_url"]}, key=False), 400)
    assert_problem(post_scan(staff_client, event.event_id, {"ticket": confirmed["ticket_url"]}, key="no pe"), 400)
    for ticket, event_id, reason in ((waitlisted["ticket_url"], event.event_id, "waitlisted"),
                                     (elsewhere["ticket_url"], event.event_id, "other_event"),
                                     (cancelled["ticket_url"], other.event_id, "cancelled")):
        body = assert_problem(post_scan(staff_client, event_id, {"ticket": ticket}), 409)
        assert body["reason"] == reason and "Not admissible" in body["detail"]
    assert_problem(post_scan(student_client, event.event_id, {"ticket": confirmed["ticket_url"]}), 403)
    assert_problem(student_client.get(f"/api/events/{event.event_id}/checkins/stats"), 403)
    assert_problem(staff_client.get("/api/events/nope/checkins/stats"), 404)
    assert staff_client.get(f"/api/events/{event.event_id}/checkins/stats").json() == {
        "confirmed": 1, "checked_in": 0}


def test_undo_is_staff_only_idempotent_and_lets_the_ticket_in_again(event, staff_client, student_client):
    ticket = register(event.event_id, "ann").data["ticket_url"]
    registration_id = post_scan(staff_client, event.event_id, {"ticket": ticket}).json()["registration_id"]
    url = f"/api/events/{event.event_id}/checkins/{registration_id}"
    assert_problem(student_client.delete(url, HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4())), 403)
    key = str(uuid.uuid4())
    undone = staff_client.delete(url, HTTP_IDEMPOTENCY_KEY=key)
    assert undone.status_code == 200 and undone.json()["status"] == "not_checked_in"
    again = staff_client.delete(url, HTTP_IDEMPOTENCY_KEY=key)
    assert again.content == undone.content and again["Idempotent-Replayed"] == "true"
    assert staff_client.get(f"/api/events/{event.event_id}/checkins/stats").json()["checked_in"] == 0
    assert post_scan(staff_client, event.event_id, {"ticket": ticket}).status_code == 201


def test_registration_api_exposes_the_ticket_url_its_qr_encodes(event, student_client):
    response = student_client.post(f"/api/events/{event.event_id}/registrations", data="{}",
                                   content_type="application/json", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    body = response.json()
    assert body["ticket_url"].startswith("http://localhost:8000/tickets/")
    listed = student_client.get("/api/me/registrations").json()["registrations"]
    assert [r["ticket_url"] for r in listed] == [body["ticket_url"]]


def test_a_ticket_url_opened_by_staff_leads_to_the_door(event, staff_client, student_client):
    ticket = register(event.event_id, "student1").data["ticket_url"]
    path = ticket.removeprefix("http://localhost:8000")
    response = staff_client.get(path)
    assert response.status_code == 302 and response["Location"].startswith(f"/events/{event.event_id}/door/#ticket=")
    assert student_client.get(path)["Location"] == f"/events/{event.event_id}/"
    assert student_client.get("/tickets/forged:abc/").status_code == 400


# --- the door's search and list, and hostile text on their fields ---------------------------------------------


@pytest.mark.parametrize("q", ["x" * 101, "ann\x00", "%", "' OR 1=1 --", "<script>alert(1)</script>", "\u202e\u0007",
                               "0" * 12, "ａｎｎ", "a" * 100])
def test_any_search_text_gets_an_answer_or_a_readable_400_never_a_5xx(event, staff_client, q):
    response = staff_client.get(f"/api/events/{event.event_id}/door-search", {"q": q})
    if response.status_code == 400:
        assert_problem(response, 400)
    else:
        assert response.status_code == 200 and response.json()["attendees"] == []


@pytest.mark.parametrize("ticket", ["0" * 12, "01A2-484E-1942", "f" * 32, "0" * 33, "g" * 12, "01a2 484e 194",
                                    "\u0660" * 12, "0" * 2001])
def test_any_typed_code_is_refused_with_a_readable_400_never_a_5xx(event, staff_client, ticket):
    body = assert_problem(post_scan(staff_client, event.event_id, {"ticket": ticket, "door": "A"}), 400)
    assert "genuine" not in body["detail"]


def test_the_door_list_pages_every_registration_with_its_code_and_ticket(event, staff_client, student_client):
    ann = register(event.event_id, "ann").data  # the only seat
    register(event.event_id, "bob")  # waiting
    response = staff_client.get(f"/api/events/{event.event_id}/door-list")
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    rows = {row["user"]: row for row in response.json()["attendees"]}
    assert (rows["ann"]["code"], rows["bob"]["status"]) == (ann["registration_id"][:12], "waitlisted")
    assert post_scan(staff_client, event.event_id, {"ticket": rows["ann"]["ticket"]}).status_code == 201
    assert student_client.get(f"/api/events/{event.event_id}/door-list").status_code == 403
    assert student_client.get(f"/api/events/{event.event_id}/door-search", {"q": "ann"}).status_code == 403
    assert staff_client.get("/api/events/000000000000/door-search", {"q": "ann"}).status_code == 404
    assert_problem(staff_client.get(f"/api/events/{event.event_id}/door-list", {"cursor": "junk"}), 400)
