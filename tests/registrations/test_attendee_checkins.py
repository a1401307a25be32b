"""The attendee list as staff use it at an event: who is checked in and when, the totals, and a CSV a
spreadsheet opens as UTF-8 with names, check-in times and answers (DynamoDB Local)."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.contrib.auth.models import User

from registrations import attendees, selectors, services
from registrations.checkins import services as checkin_services
from tems.identity import user_key
from tests.registrations.helpers import make_event, new_key, register

pytestmark = pytest.mark.django_db

# The one format of every moment on the pages (tems.templatetags.when): weekday, date, 24-hour time, zone.
MOMENT = re.compile(r"^[A-Z][a-z]{2} \d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d \S+$")


@pytest.fixture
def event(ddb):
    event = make_event(capacity=2, title="Gala")
    for username, first, last in (("ines", "Inés", "García"), ("bob", "Bob", "Stone"), ("cat", "Cat", "Wu")):
        user = User.objects.create_user(username, f"{username}@uni.test", "pw", first_name=first, last_name=last)
        outcome = register(event.event_id, user_key(user), user_name=username)
        if username == "ines":
            checkin_services.checkin_create(event_id=event.event_id, ticket_text=outcome.data["ticket_url"],
                                            door="North", staff_id="k-staff", staff_name="staffer",
                                            idempotency_key=new_key(), fingerprint="scan")
    return event


def test_the_list_shows_names_check_ins_in_the_one_format_and_the_totals(event, staff_client):
    page = staff_client.get(f"/events/{event.event_id}/attendees/").content.decode()
    totals = dict(re.findall(r"<dt>([^<]+)</dt><dd>(\d+)</dd>", page))
    assert totals == {"Confirmed": "2", "Checked in": "1", "Waiting": "1", "Offered": "0"}
    ines = re.search(r'<tr class="attendee-row status-confirmed checked-in">(.*?)</tr>', page, re.S).group(1)
    assert "Inés García" in ines and "door North, by staffer" in ines
    checked_in = re.search(r'data-label="Checked in">([^<]+)<', ines).group(1)
    registered = re.search(r'data-label="Registered">([^<]+)<', ines).group(1)
    assert MOMENT.match(checked_in) and MOMENT.match(registered), (checked_in, registered)
    assert "Waiting, number 1" in page
    only_waiting = staff_client.get(f"/events/{event.event_id}/attendees/", {"status": "waitlisted"}).content.decode()
    assert "Cat Wu" in only_waiting and "Inés" not in only_waiting


def test_the_csv_is_utf8_with_a_bom_and_carries_names_check_in_times_and_answers(event, staff_client):
    response = staff_client.get(f"/events/{event.event_id}/attendees.csv")
    raw = b"".join(response.streaming_content)
    assert raw.startswith(b"\xef\xbb\xbf") and raw.count(b"\xef\xbb\xbf") == 1
    table = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    ines = next(row for row in table if row["user"] == "ines")
    assert (ines["first_name"], ines["last_name"], ines["checked_in_door"]) == ("Inés", "García", "North")
    assert MOMENT.match(ines["checked_in_at"]) and MOMENT.match(ines["registered_at"])
    assert next(row for row in table if row["user"] == "bob")["checked_in_at"] == ""


def test_a_seat_offered_from_the_waiting_list_counts_as_offered_not_confirmed(ddb):
    event = make_event(capacity=2, offer_hours=24, title="Offer night")
    holder = register(event.event_id, "holder").data["registration_id"]
    register(event.event_id, "stays")
    register(event.event_id, "next")  # waits, and is offered the seat the holder frees
    services.registration_cancel(user_id="holder", registration_id=holder, sleep=lambda _: None)
    other = make_event(capacity=1, offer_hours=24)  # another event's open offer is not this one's
    other_holder = register(other.event_id, "h2").data["registration_id"]
    register(other.event_id, "w2")
    services.registration_cancel(user_id="h2", registration_id=other_holder, sleep=lambda _: None)
    stored = selectors.event_get(event_id=event.event_id)
    totals = attendees.attendee_totals(event=stored, seats=selectors.seats_for(event=stored))
    assert totals == {"confirmed": 1, "offered": 1, "waiting": 0, "checked_in": 0}
