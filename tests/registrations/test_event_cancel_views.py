"""The "Cancel event" page, the cancel API (problem+json), what a cancelled event's pages, calendar file and door
say, and the newest-first message list."""

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from icalendar import Calendar

from registrations import selectors
from registrations.events import services as event_services
from registrations.messages import services as messages
from registrations.messages.models import EventMessage
from tems.clock import utcnow
from tems.identity import user_key
from tests.registrations.helpers import make_event, register


@pytest.fixture
def event(ddb, student):
    event = make_event(capacity=1, title="Robot night", starts_at=datetime(2027, 5, 1, 17, 30, tzinfo=UTC))
    register(event.event_id, user_key(student), user_name="student1")
    register(event.event_id, "someone-waiting", user_name="waiting1")  # full: waitlisted
    return event


def page_url(event) -> str:
    return f"/events/{event.event_id}/cancel/"


def api_cancel(client, event_id: str, key: str | None):
    headers = {"Idempotency-Key": key} if key else {}
    return client.post(f"/api/events/{event_id}/cancel", "{}", content_type="application/json", headers=headers)


def test_the_confirmation_says_how_many_people_will_be_told(event, staff_client):
    page = staff_client.get(page_url(event))
    assert page.status_code == 200
    text = page.content.decode()
    assert "This e-mails 2 people" in text and "1 with a seat and 1 on the waiting list" in text
    assert not selectors.event_get(event_id=event.event_id).is_cancelled  # a look changes nothing


def test_posting_the_confirmation_cancels_once_however_often_it_is_posted(event, staff_client):
    key = staff_client.get(page_url(event)).context["key"]
    for _ in range(3):  # a double-click and a retried post of the same confirmation
        answer = staff_client.post(page_url(event), {"idempotency_key": key})
        assert answer.status_code == 302 and answer["Location"] == f"/events/{event.event_id}/"
    assert selectors.event_get(event_id=event.event_id).is_cancelled
    assert [m.kind for m in selectors.message_list(event_id=event.event_id)] == [EventMessage.CANCELLATION]
    detail = staff_client.get(f"/events/{event.event_id}/").content.decode()
    assert "This event is cancelled." in detail and "Cancel event</a>" not in detail
    assert "This event was cancelled on" in staff_client.get(page_url(event)).content.decode()


def test_a_student_sees_the_cancellation_and_no_register_or_cancel_button(event, student_client, other_student,
                                                                           client):
    api_cancel_as_staff(event)
    mine = student_client.get(f"/events/{event.event_id}/").content.decode()
    assert "This event is cancelled." in mine and "cancel-step" not in mine
    client.force_login(other_student)
    theirs = client.get(f"/events/{event.event_id}/").content.decode()
    assert "The event is cancelled." in theirs and 'class="register-form"' not in theirs
    refused = client.post(f"/api/events/{event.event_id}/registrations", "{}", content_type="application/json",
                          headers={"Idempotency-Key": str(uuid.uuid4())})
    assert refused.status_code == 409 and refused["Content-Type"] == "application/problem+json"
    assert refused.json()["reason"] == "event_cancelled"


def api_cancel_as_staff(event) -> None:
    from django.contrib.auth.models import User
    from django.test import Client

    staff = User.objects.get_or_create(username="organiser", defaults={"is_staff": True})[0]
    client = Client()
    client.force_login(staff)
    assert api_cancel(client, event.event_id, str(uuid.uuid4())).status_code == 200


def test_the_api_cancels_once_per_key_and_answers_any_later_key_the_same(event, staff_client):
    key = str(uuid.uuid4())
    first = api_cancel(staff_client, event.event_id, key)
    assert first.status_code == 200 and first.json()["status"] == "cancelled"
    again = api_cancel(staff_client, event.event_id, key)
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    later = api_cancel(staff_client, event.event_id, str(uuid.uuid4()))
    assert later.status_code == 200 and later.json()["cancelled_at"] == first.json()["cancelled_at"]
    assert staff_client.get(first.json()["notice"]).json()["kind"] == EventMessage.CANCELLATION
    assert staff_client.get(f"/api/events/{event.event_id}").json()["cancelled_at"] == first.json()["cancelled_at"]


def test_the_api_refuses_as_problem_json(event, staff_client, student_client):
    for answer, status in [(api_cancel(staff_client, event.event_id, None), 400),  # no Idempotency-Key
                           (api_cancel(student_client, event.event_id, str(uuid.uuid4())), 403),
                           (api_cancel(staff_client, "nosuchevent", str(uuid.uuid4())), 404)]:
        assert answer.status_code == status and answer["Content-Type"] == "application/problem+json"
    assert not selectors.event_get(event_id=event.event_id).is_cancelled
    assert staff_client.get(page_url(event)).status_code == 200
    assert student_client.get(page_url(event)).status_code == 403


def test_the_door_api_refuses_a_cancelled_event_as_problem_json(event, student, staff_client):
    from registrations.ticket_tokens import ticket_token

    claim = selectors.claim_get(event_id=event.event_id, user_id=user_key(student))
    api_cancel(staff_client, event.event_id, str(uuid.uuid4()))
    ticket = ticket_token(event_id=event.event_id, registration_id=claim.registration_id, user_id=user_key(student))
    scan = staff_client.post(f"/api/events/{event.event_id}/checkins", json.dumps({"ticket": ticket}),
                             content_type="application/json", headers={"Idempotency-Key": str(uuid.uuid4())})
    assert scan.status_code == 409 and scan.json()["reason"] == "event_cancelled"


def calendar_entry(client, registration_id: str):
    response = client.get(f"/registrations/{registration_id}/calendar.ics")
    assert response.status_code == 200
    return response.content, Calendar.from_ical(response.content).walk("VEVENT")[0]


def test_the_calendar_file_turns_cancelled_with_the_same_uid_a_higher_sequence_and_a_tzid(event, student,
                                                                                        student_client,
                                                                                        staff_client):
    claim = selectors.claim_get(event_id=event.event_id, user_id=user_key(student))
    _, before = calendar_entry(student_client, claim.registration_id)
    api_cancel(staff_client, event.event_id, str(uuid.uuid4()))
    raw, after = calendar_entry(student_client, claim.registration_id)
    assert str(before["status"]) == "CONFIRMED" and str(after["status"]) == "CANCELLED"
    assert str(after["uid"]) == str(before["uid"])
    assert int(after["sequence"]) > int(before["sequence"])
    text = raw.decode()
    vevent = text[text.index("BEGIN:VEVENT"):text.index("END:VEVENT")]  # VTIMEZONE's own DTSTARTs are local
    times = [line for line in vevent.splitlines() if line.startswith(("DTSTART", "DTEND"))]
    assert len(times) == 2 and all(";TZID=Europe/London:" in line for line in times), times
    assert b"BEGIN:VTIMEZONE" in raw and b"TZID:Europe/London" in raw
    assert after.decoded("dtstart") == datetime(2027, 5, 1, 17, 30, tzinfo=UTC)


def test_an_edit_raises_the_sequence_too(event, student, student_client):

    claim = selectors.claim_get(event_id=event.event_id, user_id=user_key(student))
    _, before = calendar_entry(student_client, claim.registration_id)
    current = selectors.event_get(event_id=event.event_id)
    event_services.event_update(event_id=event.event_id, expected_version=int(current.version), title="Robot night",
                          description="", location="", starts_at=current.starts_at + timedelta(hours=1),
                          capacity=1, updated_by="staff")
    _, after = calendar_entry(student_client, claim.registration_id)
    assert int(after["sequence"]) > int(before["sequence"])


# --- the message list: newest first, a page at a time -----------------------------------------------------

def test_an_event_with_more_than_a_page_of_messages_lists_the_newest_first_and_pages_on(ddb, staff_client):
    event = make_event(capacity=3, starts_at=utcnow() + timedelta(days=3))
    subjects = [f"Note {n:02d}" for n in range(25)]
    for subject in subjects:
        messages.message_send_once(event_id=event.event_id, user_id="staff-key", created_by="staffer",
                                   idempotency_key=str(uuid.uuid4()), fingerprint=subject, audience="confirmed",
                                   subject=subject, body="x")
    first = staff_client.get(f"/api/events/{event.event_id}/messages").json()
    assert [m["subject"] for m in first["messages"]] == subjects[::-1][:20]
    second = staff_client.get(first["next"]).json()
    assert [m["subject"] for m in second["messages"]] == subjects[::-1][20:]
    page = staff_client.get(f"/events/{event.event_id}/messages/").content.decode()
    assert "Note 24" in page and "Note 04" not in page and "Older messages" in page
    assert staff_client.get(f"/api/events/{event.event_id}/messages?cursor=forged").status_code == 400


def test_my_registrations_say_the_event_is_cancelled_and_offer_no_cancel(event, student, student_client,
                                                                          staff_client):
    api_cancel(staff_client, event.event_id, str(uuid.uuid4()))
    [row] = student_client.get("/api/me/registrations").json()["registrations"]
    assert row["event_cancelled"] is True and row["status"] == "confirmed"
    page = student_client.get("/me/registrations/").content.decode()
    assert "Event cancelled" in page and "cancel-step" not in page


def test_the_page_takes_a_reason_and_the_event_page_shows_it(event, staff_client, student_client):
    answer = staff_client.post(page_url(event), {"idempotency_key": str(uuid.uuid4()),
                                                 "reason": "  The hall is flooded.\r\nSorry!  "})
    assert answer.status_code == 302
    assert selectors.event_get(event_id=event.event_id).cancel_reason == "The hall is flooded.\nSorry!"
    page = student_client.get(f"/events/{event.event_id}/").content.decode()
    assert "The hall is flooded.<br>Sorry!" in page


@pytest.mark.parametrize(("reason", "says"), [
    ("x" * 20_000, "20,000 characters long; at most 500 fit"),
    ("Stop\x1b[2J\x07", "control characters"),
    ("nul\x00here", "Null characters are not"),
])
def test_a_hostile_reason_gets_a_readable_message_never_a_server_error(event, staff_client, reason, says):
    key = str(uuid.uuid4())
    page = staff_client.post(page_url(event), {"idempotency_key": key, "reason": reason})
    assert page.status_code == 400 and says in page.content.decode()
    api = staff_client.post(f"/api/events/{event.event_id}/cancel", json.dumps({"reason": reason}),
                            content_type="application/json", headers={"Idempotency-Key": str(uuid.uuid4())})
    assert api.status_code == 400 and api["Content-Type"] == "application/problem+json"
    assert not selectors.event_get(event_id=event.event_id).is_cancelled


def test_the_api_takes_a_reason_and_answers_it(event, staff_client):
    answer = staff_client.post(f"/api/events/{event.event_id}/cancel", json.dumps({"reason": "Snow."}),
                               content_type="application/json", headers={"Idempotency-Key": str(uuid.uuid4())})
    assert answer.status_code == 200 and answer.json()["reason"] == "Snow."
    later = api_cancel(staff_client, event.event_id, str(uuid.uuid4()))
    assert later.json()["reason"] == "Snow."  # the first reason stands
