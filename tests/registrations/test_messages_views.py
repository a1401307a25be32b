"""The "Message attendees" page and the messages API: preview the count, send once per tap, problem+json."""

import json
import uuid
from datetime import UTC, datetime

import pytest

from registrations import selectors
from registrations.events import services as event_services
from tems import outbox
from tems.identity import user_key
from tems.templatetags.when import when_text
from tests.registrations.helpers import make_event, register


@pytest.fixture
def event(ddb, student):
    event = make_event(capacity=1)
    register(event.event_id, user_key(student), user_name="student1")
    register(event.event_id, "someone-waiting", user_name="waiting1")  # full: waitlisted
    return event


def page_url(event) -> str:
    return f"/events/{event.event_id}/messages/"


def api_url(event) -> str:
    return f"/api/events/{event.event_id}/messages"


def posted(**fields) -> dict:
    return {"audience": "confirmed", "subject": "Room change", "body": "Room 101.\nBring {nothing}.", **fields}


def test_the_page_shows_each_audience_with_its_count(event, staff_client):
    page = staff_client.get(page_url(event))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Confirmed (1)" in text and "On the waiting list (1)" in text and "Checked in (0)" in text


def test_preview_then_send_writes_one_message_however_often_send_is_posted(event, staff_client):
    preview = staff_client.post(page_url(event), {**posted(), "step": "preview"})
    assert preview.status_code == 200
    text = preview.content.decode()
    assert "This e-mails 1 person" in text
    key = preview.context["confirm"]["key"]
    for _ in range(3):  # a double-click, and a retried post, of the same confirm step
        sent = staff_client.post(page_url(event), {**posted(), "step": "send", "idempotency_key": key})
        assert sent.status_code == 302 and sent["Location"] == page_url(event)
    [message] = selectors.message_list(event_id=event.event_id)
    assert (message.subject, message.audience) == ("Room change", "confirmed")
    assert "Room change" in staff_client.get(page_url(event)).content.decode()


def test_htmx_gets_the_form_region_and_a_client_redirect(event, staff_client):
    preview = staff_client.post(page_url(event), {**posted(), "step": "preview"}, headers={"HX-Request": "true"})
    assert preview.status_code == 200 and b"<html" not in preview.content and b'id="message-form"' in preview.content
    sent = staff_client.post(page_url(event), {**posted(), "step": "send", "idempotency_key": str(uuid.uuid4())},
                             headers={"HX-Request": "true"})
    assert sent.status_code == 200 and sent["HX-Redirect"] == page_url(event)


def test_bad_input_is_a_readable_message_on_the_page(event, staff_client):
    answer = staff_client.post(page_url(event), {**posted(subject="  ", audience="everyone"), "step": "preview"})
    assert answer.status_code == 400
    assert answer.context["form"].errors.keys() == {"subject", "audience"}
    assert selectors.message_list(event_id=event.event_id).items == []


def test_students_get_403_and_unknown_events_404(event, student_client, staff_client):
    assert student_client.get(page_url(event)).status_code == 403
    assert staff_client.get("/events/no-such-event/messages/").status_code == 404


def api_post(client, event, body: dict, key: str | None = None):
    headers = {"Idempotency-Key": key} if key else {}
    return client.post(api_url(event), json.dumps(body), content_type="application/json", headers=headers)


def test_the_api_sends_once_per_key_and_reports_progress(event, staff_client):
    key = str(uuid.uuid4())
    first = api_post(staff_client, event, posted(), key)
    assert first.status_code == 202
    again = api_post(staff_client, event, posted(), key)
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    progress = staff_client.get(first["Location"])
    assert progress.status_code == 200
    assert progress.json() == {**first.json(), "queued": 0, "done": False}  # the relay has not fanned it out yet
    listed = staff_client.get(api_url(event)).json()["messages"]
    assert [m["id"] for m in listed] == [first.json()["id"]]


@pytest.mark.parametrize(("body", "key", "status"), [
    (posted(), None, 400),  # no Idempotency-Key
    (posted(audience="everyone"), "k", 400),
    (posted(body=""), "k", 400),
    (posted(subject=["x"]), "k", 400),
])
def test_the_api_refuses_bad_requests_as_problem_json(event, staff_client, body, key, status):
    answer = api_post(staff_client, event, body, key and str(uuid.uuid4()))
    assert answer.status_code == status and answer["Content-Type"] == "application/problem+json"


def test_the_api_is_for_staff_and_known_events(event, student_client, staff_client):
    assert api_post(student_client, event, posted(), str(uuid.uuid4())).status_code == 403
    missing = staff_client.post("/api/events/no-such-event/messages", json.dumps(posted()),
                                content_type="application/json", headers={"Idempotency-Key": str(uuid.uuid4())})
    assert missing.status_code == 404 and missing["Content-Type"] == "application/problem+json"
    assert staff_client.get(f"{api_url(event)}/{'0' * 32}").status_code == 404
    key = str(uuid.uuid4())
    api_post(staff_client, event, posted(), key)
    reused = api_post(staff_client, event, posted(subject="Another"), key)
    assert reused.status_code == 422


def test_the_reminder_lead_time_is_set_on_create_kept_by_other_edits_and_checked(ddb, staff_client):
    body = {"title": "Lab tour", "starts_at": "2030-01-01T10:00:00+00:00", "capacity": 5, "reminder_hours": 48}
    created = staff_client.post("/api/events", json.dumps(body), content_type="application/json",
                                headers={"Idempotency-Key": str(uuid.uuid4())})
    assert created.status_code == 201 and created.json()["reminder_hours"] == 48
    event_id = created.json()["id"]
    event_services.event_update(event_id=event_id, expected_version=1, title="Lab tour (moved)", description="",
                          location="", starts_at=datetime(2030, 1, 2, 10, tzinfo=UTC), capacity=5,
                          updated_by="staff")
    assert selectors.event_get(event_id=event_id).reminder_hours_or_default == 48
    default = staff_client.post("/api/events", json.dumps({**body, "reminder_hours": None}),
                                content_type="application/json", headers={"Idempotency-Key": str(uuid.uuid4())})
    assert default.json()["reminder_hours"] == 24
    refused = staff_client.post("/api/events", json.dumps({**body, "reminder_hours": -1}),
                                content_type="application/json", headers={"Idempotency-Key": str(uuid.uuid4())})
    assert refused.status_code == 400 and "reminder_hours" in refused.json()["errors"]


def test_the_preview_shows_the_mail_itself(event, staff_client):
    preview = staff_client.post(page_url(event), {**posted(), "step": "preview"})
    mail = preview.context["confirm"]["mail"]
    assert mail["subject"] == f"{event.title}: Room change"
    assert mail["body"].startswith("Room 101.\nBring {nothing}.\n\n(Sent by the organisers of")
    text = preview.content.decode()
    assert "The e-mail each of them gets" in text and "Bring {nothing}." in text


def progress_url(event) -> str:
    return f"/events/{event.event_id}/messages/sent/"


def test_the_sent_list_polls_itself_until_every_message_is_sent(event, staff_client):
    quiet = staff_client.get(progress_url(event))
    assert quiet.status_code == 200 and b"<html" not in quiet.content and b"hx-trigger" not in quiet.content
    staff_client.post(page_url(event), {**posted(), "step": "send", "idempotency_key": str(uuid.uuid4())})
    sending = staff_client.get(progress_url(event))
    text = sending.content.decode()
    assert 'id="sent-list"' in text and 'hx-trigger="every 2s"' in text
    assert f'hx-get="{progress_url(event)}"' in text and "0 so far (sending…)" in text
    assert 'hx-trigger="every 2s"' in staff_client.get(page_url(event)).content.decode()  # the page starts it
    [message] = selectors.message_list(event_id=event.event_id)
    outbox.outbox_relay()  # fans the message out
    done = staff_client.get(progress_url(event)).content.decode()
    assert "hx-trigger" not in done and "1, done" in done  # the answer without a trigger ends the polling
    assert when_text(message.created_at) in done and "a.m." not in done and "p.m." not in done


def test_the_progress_is_for_staff_and_known_events(event, student_client, staff_client):
    assert student_client.get(progress_url(event)).status_code == 403
    assert staff_client.get("/events/no-such-event/messages/sent/").status_code == 404
