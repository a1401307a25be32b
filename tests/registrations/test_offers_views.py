"""The pages of an offer: the event page and My registrations show it with Accept and Decline (POSTs), and the
mail's signed link opens a page that only shows it until its form is posted (mail scanners fetch links)."""

import re
import uuid

import pytest
from django.test import Client

from registrations import notifications, services
from registrations.models import CONFIRMED, OFFERED, Registration
from registrations.offers.links import offer_token
from registrations.offers.models import Offer
from tems.accounts import email_address_mark_verified
from tems.identity import user_key
from tems.outbox import OutboxMessage
from tems.templatetags.when import when_text
from tests.helpers import assert_invariants_clean
from tests.registrations.helpers import make_event, register


@pytest.fixture
def offered(ddb, student, other_student):
    """``student`` holds an offer of the one seat of an event in offer mode; ``other_student`` waits behind."""
    event = make_event(capacity=1, offer_hours=24, title="Lab tour")
    holder = register(event.event_id, "holder").data["registration_id"]
    mine = register(event.event_id, user_key(student), user_name=student.get_username()).data["registration_id"]
    register(event.event_id, user_key(other_student), user_name=other_student.get_username())
    services.registration_cancel(user_id="holder", registration_id=holder)
    return event, mine


def status(user, registration_id):
    return Registration.get(*Registration.user_key_for(user_key(user), registration_id), consistent_read=True).status


def form_post(client, url, action, origin=None, **headers):
    data = {"action": action, "idempotency_key": str(uuid.uuid4()), **({"from": origin} if origin else {})}
    return client.post(url, data, **headers)


def test_the_event_page_and_my_registrations_show_the_offer(offered, student_client):
    event, mine = offered
    page = student_client.get(f"/events/{event.event_id}/").content.decode()
    assert "A seat is yours until" in page and "Accept the seat" in page and "Decline" in page
    listing = student_client.get("/me/registrations/").content.decode()
    assert "Seat offered" in listing and f"/registrations/{mine}/offer/" in listing


def test_accept_from_the_event_page_with_htmx_answers_the_panel(offered, student_client, student):
    event, mine = offered
    response = form_post(student_client, f"/registrations/{mine}/offer/", "accept", "event", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert 'id="registration-panel"' in response.content.decode() and "The seat is yours" in response.content.decode()
    assert status(student, mine) == CONFIRMED
    assert_invariants_clean()


def test_decline_from_my_registrations_redirects_with_a_notice(offered, student_client, other_student):
    _, mine = offered
    response = form_post(student_client, f"/registrations/{mine}/offer/", "decline", "list")
    assert response.status_code == 302 and response["Location"] == "/me/registrations/"
    other = Client()
    other.force_login(other_student)
    assert "Seat offered" in other.get("/me/registrations/").content.decode()


def test_the_mail_links_to_a_page_that_a_get_does_not_answer(offered, student, monkeypatch):
    event, mine = offered
    student.email = "s@uni.test"
    student.save()
    email_address_mark_verified(user=student)
    sent = []

    class FakeMail:
        def __init__(self, subject, body, sender, to, headers):
            sent.append((subject, body))

        def send(self):
            pass

    monkeypatch.setattr(notifications, "EmailMessage", FakeMail)
    message = next(m for m in OutboxMessage.scan() if m.message_type == "SeatOffered")
    notifications.seat_offered(message)
    (subject, body), = sent
    assert "Lab tour" in subject and f"held for you until {when_text(message.data['ends_at'])}." in body
    link = re.search(r"http\S+/offers/(\S+)/", body)
    path = "/offers/" + link.group(1) + "/"
    anonymous = Client()  # a mail scanner, or the student's phone without a session
    for _ in range(2):
        shown = anonymous.get(path)
        assert shown.status_code == 200 and "Accept the seat" in shown.content.decode()
    assert status(student, mine) == OFFERED
    accepted = form_post(anonymous, path, "accept")
    assert accepted.status_code == 200 and "The seat is yours" in accepted.content.decode()
    assert status(student, mine) == CONFIRMED
    assert Offer.get(*Offer.key_for(user_key(student), mine)).state == Offer.ACCEPTED


def test_a_forged_link_is_404(offered, student):
    _, mine = offered
    token = offer_token(user_id=user_key(student), registration_id=mine)
    assert Client().get(f"/offers/{token[:-2]}xx/").status_code == 404
    assert Client().get(f"/offers/{token}/").status_code == 200


def test_the_event_list_card_says_seat_offered(offered, student_client):
    event, _ = offered
    listing = student_client.get("/events/").content.decode()
    assert "Seat offered" in listing and event.title in listing
