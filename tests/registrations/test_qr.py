"""A ticket's QR code is drawn on read, by its own cacheable URL, never on the registration's write path
(issue 13): the stored answer of a registration links it and is replayed byte for byte."""

import uuid

import pytest

from registrations import serializers, services
from tems.identity import user_key
from tems.metering import metered
from tests.registrations.helpers import make_event, register


@pytest.fixture
def event(moto_ddb):
    return make_event(capacity=1, title="Robot night")


def test_the_owner_gets_the_tickets_qr_code_as_a_cacheable_svg(event, student, student_client, monkeypatch):
    data = register(event.event_id, user_key(student)).data
    with metered() as meter:
        response = student_client.get(data["qr_url"])
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert response.content.decode() == serializers.registration_qr_svg(ticket_url=data["ticket_url"])
    # On its own (not inlined in a page) an SVG is only drawn by browsers with its namespace.
    assert response.content.startswith(b'<svg xmlns="http://www.w3.org/2000/svg"')
    assert dict(meter.requests) == {"GetItem": 1}  # the registration, to know it is theirs and still live
    assert "private" in response["Cache-Control"] and "max-age=3600" in response["Cache-Control"]
    assert response["ETag"]
    # Revalidation is the ownership read and nothing else: the ETag comes from the ticket URL, not the drawing.
    monkeypatch.setattr(serializers, "registration_qr_svg", lambda **_: pytest.fail("drew for a 304"))
    again = student_client.get(data["qr_url"], HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304 and again.content == b""


def test_nobody_else_gets_it_and_a_cancelled_registration_has_none(event, student, other_student, client):
    data = register(event.event_id, user_key(student)).data
    assert client.get(data["qr_url"]).status_code == 302  # to the log-in page
    client.force_login(other_student)
    assert client.get(data["qr_url"]).status_code == 404
    client.force_login(student)
    services.registration_cancel(user_id=user_key(student), registration_id=data["registration_id"])
    assert client.get(data["qr_url"]).status_code == 404


def test_a_replay_is_the_first_answer_byte_for_byte_and_carries_no_drawing(event, student_client):
    key = str(uuid.uuid4())
    url = f"/api/events/{event.event_id}/registrations"
    first = student_client.post(url, HTTP_IDEMPOTENCY_KEY=key)
    again = student_client.post(url, HTTP_IDEMPOTENCY_KEY=key)
    assert (first.status_code, again.status_code, again["Idempotent-Replayed"]) == (201, 201, "true")
    assert again.content == first.content and b"<svg" not in first.content
    body = first.json()
    assert body["qr_url"] == f"/registrations/{body['registration_id']}/qr.svg"
    # The drawing is one GET away, and reads of the list still carry it inline.
    assert student_client.get(body["qr_url"]).content.startswith(b"<svg")
    listed = student_client.get("/api/me/registrations").json()["registrations"]
    assert listed[0]["qr_svg"] == serializers.registration_qr_svg(ticket_url=body["ticket_url"])


def test_pages_show_the_code_as_an_image_of_that_url(event, student, student_client):
    data = register(event.event_id, user_key(student)).data
    for url in (f"/events/{event.event_id}/", "/me/registrations/"):
        page = student_client.get(url).content.decode()
        assert f'src="{data["qr_url"]}"' in page and "<svg" not in page
