"""The pages, mails and API of a registration say what ``registration_standing`` says: nothing "confirmed" after
the event is called off, the offer mode told before joining, while waiting and while offered, a used ticket
checked in, and the answers the student gave."""

import re
import uuid
from datetime import UTC, datetime

import pytest
from icalendar import Calendar

from registrations import selectors, services
from registrations.checkins import services as checkins
from registrations.events import services as event_services
from tems.accounts import email_address_mark_verified
from tems.identity import user_key
from tems.outbox import outbox_relay
from tests.registrations.helpers import make_event, register

STARTS = datetime(2027, 5, 1, 17, 30, tzinfo=UTC)


@pytest.fixture
def full_event(ddb):
    return make_event(capacity=1, title="Robot night", location="Lab 2", starts_at=STARTS)


def cancel_event(event_id: str) -> None:
    event_services.event_cancel_once(event_id=event_id, user_id="staff-key", cancelled_by="staff",
                                     idempotency_key=str(uuid.uuid4()), fingerprint=f"cancel-{event_id}")


def test_after_the_event_is_called_off_no_surface_says_confirmed(full_event, student, student_client):
    seat = register(full_event.event_id, user_key(student)).data["registration_id"]
    cancel_event(full_event.event_id)
    card = student_client.get("/events/").content.decode()
    card = card[card.index(">Robot night<"):][:600]
    assert "Event cancelled" in card and "Confirmed" not in card
    for url in (f"/events/{full_event.event_id}/", "/me/registrations/"):
        page = student_client.get(url).content.decode()
        assert "Event cancelled" in page and "Confirmed" not in page and "qr.svg" not in page
        assert "Show this code at the door" not in page and "Show QR code" not in page
        assert "calendar.google.com" not in page
    [row] = student_client.get("/api/me/registrations").json()["registrations"]
    assert row["standing"]["kind"] == "event_cancelled" and row["standing"]["shows_ticket"] is False
    [entry] = Calendar.from_ical(student_client.get(f"/registrations/{seat}/calendar.ics").content).walk("VEVENT")
    assert str(entry["status"]) == "CANCELLED"


@pytest.fixture
def offer_mode(ddb):
    return make_event(capacity=1, title="Offer club", starts_at=STARTS, offer_hours=24)


def test_offer_mode_is_told_before_joining_while_waiting_and_in_the_mail(offer_mode, student, other_student,
                                                                         student_client, mailoutbox):
    email_address_mark_verified(user=student)
    register(offer_mode.event_id, user_key(other_student))
    before = student_client.get(f"/events/{offer_mode.event_id}/").content.decode()
    assert "has 24 hours to accept it" in before and "a freed seat goes to the first in line" not in before
    register(offer_mode.event_id, user_key(student))
    waiting = student_client.get(f"/events/{offer_mode.event_id}/").content.decode()
    assert "you have 24 hours to accept the seat" in waiting and "need do nothing" not in waiting
    outbox_relay()
    [mail] = [mail.body for mail in mailoutbox if mail.subject == "On the waiting list: Offer club"]
    assert "24 hours to accept" in mail and "need do nothing" not in mail


def test_an_offer_names_its_end_and_decline_asks_first(offer_mode, student, other_student, student_client):
    holder = register(offer_mode.event_id, user_key(other_student)).data["registration_id"]
    register(offer_mode.event_id, user_key(student))
    services.registration_cancel(user_id=user_key(other_student), registration_id=holder)
    page = student_client.get(f"/events/{offer_mode.event_id}/").content.decode()
    assert re.search(r"A seat is yours until <time[^>]*>\w{3} \d+ \w{3} \d{4}, \d\d:\d\d [A-Z]{3,4}</time>", page)
    assert re.search(r'class="offer-left">\d+.hours?, \d+.minutes? left<', page) and "Add to calendar" not in page
    assert '<summary class="button">Decline…</summary>' in page and "Decline this seat?" in page


def test_the_cancel_confirmation_says_where_the_seat_goes_in_offer_mode(offer_mode, student, other_student,
                                                                        student_client):
    seat = register(offer_mode.event_id, user_key(student)).data["registration_id"]
    register(offer_mode.event_id, user_key(other_student))
    confirm = student_client.get(f"/registrations/{seat}/cancel/?from=list").content.decode()
    assert "is offered to the first person on the waiting list, who has 24 hours to accept it" in confirm
    assert "goes at once" not in confirm


def test_a_student_sees_the_answers_they_gave(ddb, student, student_client):
    event = make_event(capacity=5, title="Diet night", starts_at=STARTS)
    answers = ('[{"id": "q1", "label": "Diet", "value": "vegan"},'
               ' {"id": "q2", "label": "Topics", "value": ["AI", "Space"]}]')
    register(event.event_id, user_key(student), answers=answers)
    for url in (f"/events/{event.event_id}/", "/me/registrations/"):
        page = student_client.get(url).content.decode()
        assert "Your answers" in page and "<dt>Diet</dt><dd>vegan</dd>" in page and "AI, Space" in page
    assert selectors.registration_list(user_id=user_key(student))[0]["answers"][0]["value"] == "vegan"


def test_a_scanned_ticket_reads_checked_in_and_shows_no_code_to_scan_again(full_event, student, student_client):
    data = register(full_event.event_id, user_key(student)).data
    checkins.checkin_create(event_id=full_event.event_id, ticket_text=data["ticket_url"], door="A",
                            staff_id="staff-key", idempotency_key=str(uuid.uuid4()), fingerprint="scan")
    for url in (f"/events/{full_event.event_id}/", "/me/registrations/"):
        page = student_client.get(url).content.decode()
        assert "Checked in" in page and "qr.svg" not in page, url
    [row] = student_client.get("/api/me/registrations").json()["registrations"]
    assert row["standing"]["kind"] == "checked_in"
