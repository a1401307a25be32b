"""The staff's attendee list, its API and its CSV export (moto: single-threaded)."""

from __future__ import annotations

import csv
import io

import pytest

from registrations import attendees, selectors
from registrations.models import REGISTRATION_BUCKETS, Registration
from tems.dynamo import metered
from tests.helpers import assert_problem
from tests.registrations.helpers import make_event, register


def seed_attendees():
    event = make_event(capacity=2)
    for name in ("carol", "Alice", "bob", "alfred"):
        register(event.event_id, f"key-{name}", user_name=name)
    return event


@pytest.fixture
def event(moto_ddb):
    return seed_attendees()


@pytest.fixture
def event_on_dynamodb_local(ddb):
    return seed_attendees()


def api(client, event_id, query=""):
    return client.get(f"/api/events/{event_id}/attendees{query}")


def test_staff_list_is_in_name_order_with_waitlist_positions(event, staff_client):
    body = api(staff_client, event.event_id).json()
    # Arrival order: carol, Alice confirmed; bob 1st and alfred 2nd on the waiting list.
    assert [(a["user"], a["status"], a["position"]) for a in body["attendees"]] == [
        ("alfred", "waitlisted", 2), ("Alice", "confirmed", None), ("bob", "waitlisted", 1),
        ("carol", "confirmed", None)]
    assert body["next"] is None


def test_search_is_a_case_insensitive_username_prefix_and_status_filters(event, staff_client):
    assert [a["user"] for a in api(staff_client, event.event_id, "?q=AL").json()["attendees"]] == ["alfred", "Alice"]
    assert [a["user"] for a in api(staff_client, event.event_id, "?status=confirmed").json()["attendees"]] == [
        "Alice", "carol"]
    assert [a["user"] for a in api(staff_client, event.event_id, "?status=waitlisted&q=b").json()["attendees"]] == [
        "bob"]


def test_pages_survive_attendees_added_between_them(event_on_dynamodb_local, staff_client):
    event = event_on_dynamodb_local
    first = api(staff_client, event.event_id, "?limit=2").json()
    register(event.event_id, "key-aaron", user_name="aaron")  # sorts before the cursor
    register(event.event_id, "key-zed", user_name="zed")  # sorts after it
    rest, url = [], first["next"]
    while url:
        body = staff_client.get(url).json()
        rest.extend(body["attendees"])
        url = body["next"]
    names = [a["user"] for a in first["attendees"] + rest]
    assert names == ["alfred", "Alice", "bob", "carol", "zed"]


def test_a_page_is_one_query_per_bucket_whatever_the_event_holds(event, staff_client):
    with metered() as meter:
        attendees.attendee_page(event_id=event.event_id, limit=20)
    # A Query of each index partition and the positions' BatchGetItem.
    assert dict(meter.requests) == {"Query": REGISTRATION_BUCKETS, "BatchGetItem": 1}


def test_students_get_403_and_unknown_events_404(event, student_client, staff_client):
    assert_problem(api(student_client, event.event_id), 403)
    assert student_client.get(f"/events/{event.event_id}/attendees/").status_code == 403
    assert student_client.get(f"/events/{event.event_id}/attendees.csv").status_code == 403
    assert_problem(api(staff_client, "ghost"), 404)
    assert_problem(api(staff_client, event.event_id, "?status=maybe"), 400)
    assert_problem(api(staff_client, event.event_id, "?cursor=forged"), 400)
    assert_problem(api(staff_client, event.event_id, "?q=" + "x" * 151), 400)


def test_the_page_lists_filters_and_pages_with_htmx(event, staff_client):
    html = staff_client.get(f"/events/{event.event_id}/attendees/?limit=3").content.decode()
    assert html.count('class="attendee-row') == 3 and 'id="more-attendees"' in html
    next_url = html.split('id="more-attendees"')[1].split('href="')[1].split('"')[0].replace("&amp;", "&")
    fragment = staff_client.get(next_url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and fragment.count('class="attendee-row') == 1
    detail = staff_client.get(f"/events/{event.event_id}/").content.decode()
    assert f"/events/{event.event_id}/attendees/" in detail
    bad = staff_client.get(f"/events/{event.event_id}/attendees/?status=maybe", follow=True)
    assert bad.status_code == 200 and "status must be one of" in bad.content.decode()


@pytest.mark.parametrize("raw, shown", [
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"), ("+1", "'+1"), ("-1", "'-1"), ("@sum", "'@sum"),
    ("\tx", "'\tx"), ("\rx", "'\rx"), ("alice", "alice"), ("", ""), (None, ""),
])
def test_cells_a_spreadsheet_would_run_get_a_leading_quote(raw, shown):
    assert attendees.safe_cell(raw) == shown


def test_csv_is_streamed_page_by_page_and_safe(moto_ddb, staff_client, monkeypatch):
    event = make_event(capacity=10)
    for name in ("=cmd", "+plus", "-minus", "@at", "plain"):
        register(event.event_id, f"key-{name}", user_name=name)
    monkeypatch.setattr(attendees, "MAX_PAGE_SIZE", 2)
    with metered() as meter:
        response = staff_client.get(f"/events/{event.event_id}/attendees.csv")
        assert response.streaming and response["Content-Type"].startswith("text/csv")
        rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == list(attendees.CSV_COLUMNS)
    assert sorted(row[1] for row in rows[1:]) == ["'+plus", "'-minus", "'=cmd", "'@at", "plain"]
    assert meter.requests["Query"] == 3 * REGISTRATION_BUCKETS  # five attendees, two a page


def test_backfill_lists_registrations_written_before_the_index(event, staff_client):
    for registration in selectors.event_registrations(event_id=event.event_id):
        registration.update(actions=[Registration.gsi1pk.remove(), Registration.gsi1sk.remove()])
    assert api(staff_client, event.event_id).json()["attendees"] == []
    assert attendees.backfill_index(event_id=event.event_id) == 4
    assert attendees.backfill_index(event_id=event.event_id) == 0
    assert [a["user"] for a in api(staff_client, event.event_id).json()["attendees"]] == [
        "alfred", "Alice", "bob", "carol"]
