"""The calendar surfaces tell what ``registration_standing`` tells: the .ics file, the signed subscription feed
(revocable from the account page) and the Google and Outlook links."""

import re
import uuid
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from django.test import Client
from icalendar import Calendar

from registrations.events import services as event_services
from tems.accounts import calendar_feed_token
from tems.identity import user_key
from tems.metering import metered
from tests.registrations.helpers import make_event, register

STARTS = datetime(2027, 5, 1, 17, 30, tzinfo=UTC)


@pytest.fixture
def full_event(ddb):
    return make_event(capacity=1, title="Robot night", location="Lab 2", starts_at=STARTS)


def entries(body: bytes) -> dict[str, object]:
    return {str(entry["uid"]): entry for entry in Calendar.from_ical(body).walk("VEVENT")}


def feed(client, token: str):
    return client.get("/me/calendar.ics", {"token": token})


def cancel_event(event_id: str) -> None:
    event_services.event_cancel_once(event_id=event_id, user_id="staff-key", cancelled_by="staff",
                                     idempotency_key=str(uuid.uuid4()), fingerprint=f"cancel-{event_id}")


def test_a_place_in_line_is_tentative_and_keeps_its_place_out_of_the_title(full_event, student, other_student,
                                                                          client):
    register(full_event.event_id, user_key(other_student))
    waiting = register(full_event.event_id, user_key(student)).data["registration_id"]
    client.force_login(student)
    [entry] = entries(client.get(f"/registrations/{waiting}/calendar.ics").content).values()
    assert str(entry["status"]) == "TENTATIVE" and "#" not in str(entry["summary"])
    assert str(entry["summary"]) == "Robot night (waiting list)"


def test_the_feed_lists_every_registration_and_follows_a_cancellation(full_event, student, other_student):
    seat = register(full_event.event_id, user_key(student)).data["registration_id"]
    other = make_event(capacity=0, title="Queue", starts_at=STARTS)
    waiting = register(other.event_id, user_key(student)).data["registration_id"]
    anonymous = Client()  # a calendar app carries no session: the token is its log-in
    token = calendar_feed_token(user=student)
    response = feed(anonymous, token)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/calendar")
    before = entries(response.content)
    assert {uid: str(entry["status"]) for uid, entry in before.items()} == {
        f"registration-{seat}@tems": "CONFIRMED", f"registration-{waiting}@tems": "TENTATIVE"}
    cancel_event(full_event.event_id)
    after = entries(feed(anonymous, token).content)[f"registration-{seat}@tems"]
    assert str(after["status"]) == "CANCELLED"
    assert int(after["sequence"]) == int(before[f"registration-{seat}@tems"]["sequence"]) + 1


def test_the_feed_reads_a_bounded_number_of_requests(ddb, student):
    for n in range(3):
        register(make_event(capacity=0 if n == 0 else 5, title=f"Event {n}").event_id, user_key(student))
    token = calendar_feed_token(user=student)
    with metered() as meter:
        assert feed(Client(), token).status_code == 200
    # One Query of the student's registrations, one BatchGetItem of their events, the waiting one's position.
    assert meter.total_requests <= 5, meter.total_requests


@pytest.mark.parametrize("token", ["", "x", "1.0", "1.0:forged", "%00%ff", "a" * 5000, "1.0:" + "A" * 43,
                                   "<script>alert(1)</script>", "../../etc/passwd"])
def test_a_hostile_or_forged_token_is_a_readable_404(ddb, student, token):
    response = feed(Client(), token)
    assert response.status_code == 404 and "calendar link is not valid" in response.content.decode()


def test_a_token_signed_for_another_purpose_or_account_opens_nothing(ddb, student, other_student):
    from django.core import signing

    elsewhere = signing.Signer(salt="tems.accounts.email-verification").sign(f"{student.pk}.0")
    assert feed(Client(), elsewhere).status_code == 404
    theirs = calendar_feed_token(user=other_student)
    # A token is its account's only: changing the account in it breaks the signature.
    assert feed(Client(), theirs.replace(f"{other_student.pk}.", f"{student.pk}.", 1)).status_code == 404


def test_replacing_the_link_on_the_account_page_kills_the_old_one(ddb, student, student_client):
    page = student_client.get("/accounts/").content.decode()
    webcal = re.search(r'href="(webcal://[^"]+)"', page).group(1).replace("&amp;", "&")
    assert urlparse(webcal).path == "/me/calendar.ics"
    old = parse_qs(urlparse(webcal).query)["token"][0]
    assert feed(Client(), old).status_code == 200
    assert student_client.post("/accounts/calendar/revoke/").status_code == 302
    assert feed(Client(), old).status_code == 404
    new = calendar_feed_token(user=student)
    assert new != old and feed(Client(), new).status_code == 200
    assert urlencode({"token": new}) in student_client.get("/accounts/").content.decode()
    student.is_active = False
    student.save()
    assert feed(Client(), new).status_code == 404


def test_a_seat_offers_google_and_outlook_beside_the_download(full_event, student, student_client):
    register(full_event.event_id, user_key(student))
    for url in (f"/events/{full_event.event_id}/", "/me/registrations/"):
        page = student_client.get(url).content.decode()
        assert "Add to calendar" in page
        google = re.search(r'href="(https://calendar\.google\.com/[^"]+)"', page).group(1).replace("&amp;", "&")
        assert parse_qs(urlparse(google).query)["dates"] == ["20270501T173000Z/20270501T193000Z"]
        assert 'href="https://outlook.live.com/calendar/0/deeplink/compose?' in page
