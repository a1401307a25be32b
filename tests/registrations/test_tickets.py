"""Tickets and mails people can use (issue 11 item 9): .ics, when/where/ticket in mails, waitlist position."""

from datetime import UTC, datetime

import pytest
from icalendar import Calendar

from registrations import services
from tems.accounts import email_address_mark_verified
from tems.identity import user_key
from tems.outbox import outbox_relay
from tests.registrations.helpers import make_event, register


@pytest.fixture
def full_event(ddb):
    return make_event(capacity=1, title="Robot night", location="Lab 2",
                      starts_at=datetime(2027, 5, 1, 17, 30, tzinfo=UTC))


def test_a_registration_downloads_as_an_ics_with_date_place_and_ticket(full_event, student, student_client):
    data = register(full_event.event_id, user_key(student)).data
    response = student_client.get(f"/registrations/{data['registration_id']}/calendar.ics")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/calendar")
    assert "attachment" in response["Content-Disposition"]
    entry = Calendar.from_ical(response.content).walk("VEVENT")[0]
    assert str(entry["summary"]) == "Robot night" and str(entry["location"]) == "Lab 2"
    assert entry.decoded("dtstart") == datetime(2027, 5, 1, 17, 30, tzinfo=UTC)
    assert str(entry["url"]) == data["ticket_url"] and str(entry["uid"]).startswith("registration-")


def test_someone_elses_ics_is_404(full_event, student, other_student, client):
    data = register(full_event.event_id, user_key(student)).data
    client.force_login(other_student)
    assert client.get(f"/registrations/{data['registration_id']}/calendar.ics").status_code == 404


def test_a_waitlisted_student_sees_the_position_not_a_qr_code(full_event, student, other_student, client):
    register(full_event.event_id, user_key(other_student))
    register(full_event.event_id, user_key(student))
    client.force_login(student)
    page = client.get(f"/events/{full_event.event_id}/").content.decode()
    assert 'class="position">1<' in page and "qr.svg" not in page and "qr-muted" not in page
    assert "Add to calendar" in page
    mine = client.get("/me/registrations/").content.decode()
    assert "Waiting list · number 1" in mine and "Show QR code" not in mine


def test_my_registrations_are_sorted_by_event_date_with_location(ddb, student, student_client):
    later = make_event(title="Later", location="Hall B", starts_at=datetime(2027, 9, 1, tzinfo=UTC))
    sooner = make_event(title="Sooner", location="Hall A", starts_at=datetime(2027, 6, 1, tzinfo=UTC))
    register(sooner.event_id, user_key(student))
    register(later.event_id, user_key(student))  # newest registration, later event
    page = student_client.get("/me/registrations/").content.decode()
    assert page.index("Sooner") < page.index("Later")
    assert "Hall A" in page and "Hall B" in page


def test_every_mail_says_when_where_and_links_the_ticket(full_event, student, other_student, mailoutbox):
    for user in (student, other_student):
        email_address_mark_verified(user=user)
    first = register(full_event.event_id, user_key(student)).data
    register(full_event.event_id, user_key(other_student))  # full: waiting list
    outbox_relay()
    mails = {mail.subject: mail.body for mail in mailoutbox}
    seat, waiting = mails["Registered: Robot night"], mails["On the waiting list: Robot night"]
    for body in (seat, waiting):
        # The one format pages show too (tems.templatetags.when): 24-hour, the zone named.
        assert "When:  Sat 1 May 2027, 18:30 BST" in body and "Where: Lab 2" in body
        assert f"/events/{full_event.event_id}/" in body and "/me/registrations/" in body
    assert first["ticket_url"] in seat and "/tickets/" not in waiting
    assert "What happens next: you need do nothing" in waiting and "leave the waiting list" in waiting
    services.registration_cancel(user_id=user_key(student), registration_id=first["registration_id"])
    mailoutbox.clear()
    outbox_relay()
    promoted = next(mail.body for mail in mailoutbox if mail.subject == "You have a seat: Robot night")
    assert "/tickets/" in promoted and "Where: Lab 2" in promoted


def test_event_cards_show_the_students_own_status_from_one_batch_read(ddb, student, other_student, client):
    from tems.metering import metered
    registered = make_event(capacity=5, title="Mine")
    waiting = make_event(capacity=1, title="Queue")
    full = make_event(capacity=1, title="Packed")
    make_event(capacity=5, title="Open")
    register(registered.event_id, user_key(student))
    register(waiting.event_id, user_key(other_student))
    register(waiting.event_id, user_key(student))
    register(full.event_id, user_key(other_student))
    client.force_login(student)
    with metered() as meter:
        page = client.get("/events/").content.decode()
    cards = {title: page[page.index(f">{title}<"):][:600] for title in ("Mine", "Queue", "Packed", "Open")}
    assert "Registered" in cards["Mine"] and "Waiting list #1" in cards["Queue"] and "Full" in cards["Packed"]
    assert "card-status" not in cards["Open"].split("</li>")[0]
    # The index query, ONE BatchGetItem for all four cards, one for the seat shards of all four (seats taken),
    # and two for the positions of the waitlisted claims (counter nodes, lanes).
    assert meter.total_requests <= 5, meter.total_requests
