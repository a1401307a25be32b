"""My registrations, a page at a time, in a bounded number of requests (moto, and DynamoDB Local for cursors)."""

from __future__ import annotations

import uuid

from django.test import Client

from registrations import selectors
from tems.identity import user_key
from tems.metering import metered
from tests.helpers import assert_problem
from tests.registrations.helpers import make_event, register


def hold(user_id: str, n: int, *, waitlisted: bool = False) -> list[str]:
    """``n`` registrations of ``user_id``, one per new event (full events put them on the waiting list)."""
    ids = []
    for _ in range(n):
        event = make_event(capacity=0 if waitlisted else 5)
        ids.append(register(event.event_id, user_id).data["registration_id"])
    return ids


def all_pages(client: Client, url: str) -> tuple[list[dict], int]:
    seen, pages = [], 0
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        seen.extend(body["registrations"])
        url, pages = body["next"], pages + 1
    return seen, pages


def test_api_pages_newest_first_with_the_same_fields(moto_ddb, student, student_client):
    ids = hold(user_key(student), 7)
    seen, pages = all_pages(student_client, "/api/me/registrations?limit=3")
    assert [r["registration_id"] for r in seen] == list(reversed(ids))
    assert pages >= 3
    assert set(seen[0]) == {"registration_id", "event_id", "user", "status", "position", "ticket_url", "qr_url",
                            "qr_svg", "created_at", "event_title", "event_starts_at", "event_location",
                            "event_cancelled", "event_ends_at", "standing", "answers"}


def test_a_cursor_survives_registrations_added_between_pages(ddb, student, student_client):
    before = hold(user_key(student), 6)
    first = student_client.get("/api/me/registrations?limit=2").json()
    added = hold(user_key(student), 2)  # newer: they sort before the cursor, never into the pages after it
    rest, _ = all_pages(student_client, first["next"])
    listed = [r["registration_id"] for r in first["registrations"] + rest]
    assert listed == list(reversed(before))
    assert not set(added) & set(listed)


def test_waitlist_positions_come_with_the_page(moto_ddb, student, student_client):
    event = make_event(capacity=0)
    for n in range(3):
        register(event.event_id, f"ahead-{n}")
    register(event.event_id, user_key(student))
    listed = student_client.get("/api/me/registrations").json()["registrations"]
    assert [(r["status"], r["position"]) for r in listed] == [("waitlisted", 4)]


def test_requests_do_not_grow_with_what_the_student_holds(moto_ddb, student):
    def requests_for_first_page(user_id: str) -> int:
        with metered() as meter:
            selectors.registration_page(user_id=user_id, limit=3)
        return meter.total_requests

    hold("few", 2, waitlisted=True)
    hold("many", 5, waitlisted=True)  # more than a page
    few, many = requests_for_first_page("few"), requests_for_first_page("many")
    # Query, events BatchGetItem, positions: the counter nodes with the queue items, and the events' lanes (one
    # BatchGetItem each).
    assert few == many == 4


def test_a_bad_or_foreign_cursor_is_400(moto_ddb, student, other_student, student_client):
    hold(user_key(other_student), 3)
    other = Client()
    other.force_login(other_student)
    theirs = other.get("/api/me/registrations?limit=1").json()["next"]
    cursor = theirs.split("cursor=")[1]
    assert_problem(student_client.get(f"/api/me/registrations?cursor={cursor}"), 400)
    assert_problem(student_client.get("/api/me/registrations?cursor=forged"), 400)
    assert_problem(student_client.get("/api/me/registrations?limit=5000"), 400)


def test_the_page_has_a_more_button_that_appends_the_next_rows(moto_ddb, student, student_client):
    hold(user_key(student), 3)
    page = student_client.get("/me/registrations/?limit=2")
    html = page.content.decode()
    assert html.count('class="registration-row') == 2
    assert 'id="more-registrations"' in html and "hx-get=" in html
    next_url = html.split('id="more-registrations"')[1].split('href="')[1].split('"')[0].replace("&amp;", "&")
    fragment = student_client.get(next_url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and fragment.count('class="registration-row') == 1
    assert 'id="more-registrations"' not in fragment
    plain = student_client.get(next_url).content.decode()  # without JavaScript: a whole page
    assert "<html" in plain and plain.count('class="registration-row') == 1


def test_a_bad_cursor_on_the_page_is_a_message_not_an_error(moto_ddb, student_client):
    response = student_client.get("/me/registrations/?cursor=" + uuid.uuid4().hex, follow=True)
    assert response.status_code == 200
    assert "cursor is not valid" in response.content.decode()
