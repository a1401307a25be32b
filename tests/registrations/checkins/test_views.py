"""The door's pages: who may open them, the event page's count and list, the service worker, jsQR served."""

from __future__ import annotations

from django.contrib.staticfiles import finders

from tems.identity import user_key
from tests.registrations.checkins.helpers import confirmed_ticket, scan
from tests.registrations.helpers import make_event


def test_door_page_is_for_staff(ddb, staff_client, student_client, client):
    event = make_event(capacity=5)
    url = f"/events/{event.event_id}/door/"
    page = staff_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="checked-in-count">0<' in html and 'id="confirmed-count">0<' in html
    assert "<script>" not in html  # everything in static files: a strict CSP holds
    assert student_client.get(url).status_code == 403
    assert client.get(url).status_code == 302
    assert staff_client.get("/events/nope/door/").status_code == 404


def test_service_worker_and_decoder_are_served(ddb, staff_client):
    event = make_event(capacity=5)
    worker = staff_client.get(f"/events/{event.event_id}/door/sw.js")
    assert worker.status_code == 200 and worker["Content-Type"].startswith("text/javascript")
    assert finders.find("vendor/jsqr/jsQR.js"), "npm ci did not install jsqr (package.json)"


def test_event_page_shows_staff_who_is_checked_in(ddb, staff_client, student_client):
    event = make_event(capacity=5)
    scan(event.event_id, confirmed_ticket(event.event_id, "ann"), door="B")
    confirmed_ticket(event.event_id, "bob")
    html = staff_client.get(f"/events/{event.event_id}/").content.decode()
    assert "1 / 2 checked in" in html and "<strong>ann</strong>" in html and "at door B" in html
    student_html = student_client.get(f"/events/{event.event_id}/").content.decode()
    assert "checked in" not in student_html and "Door page" not in student_html


def test_registration_page_links_the_ticket(ddb, student_client, student):
    event = make_event(capacity=5)
    ticket = confirmed_ticket(event.event_id, user_key(student))
    assert f'href="{ticket}"' in student_client.get(f"/events/{event.event_id}/").content.decode()
