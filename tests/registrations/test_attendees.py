"""The staff's attendee list, its API and its CSV export: on moto (single-threaded), and on DynamoDB Local where
a page is merged over the index's buckets with key conditions DynamoDB must evaluate as AWS does."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import User

from registrations import attendees, selectors
from registrations.models import REGISTRATION_BUCKETS, Registration
from tems.identity import user_key
from tems.metering import metered
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
    # A Query of each index partition, then the positions: counter nodes, queue item and the event's shard count
    # in one BatchGetItem, then its lanes; and the page's check-ins by key, one BatchGetItem.
    assert dict(meter.requests) == {"Query": REGISTRATION_BUCKETS, "BatchGetItem": 3}


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
        rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert rows[0] == list(attendees.CSV_COLUMNS)
    assert sorted(row[1] for row in rows[1:]) == ["'+plus", "'-minus", "'=cmd", "'@at", "plain"]
    assert meter.requests["Query"] == 3 * REGISTRATION_BUCKETS  # five attendees, two a page


# --- names: read from the accounts when the list is shown ---------------------------------------------------

def named(username: str, first: str, last: str = "") -> User:
    return User.objects.create_user(username, f"{username}@uni.test", "pw-x-123456", first_name=first, last_name=last)


def test_staff_see_each_attendees_name_as_it_is_now_on_the_list_the_api_and_the_csv(moto_ddb, staff_client):
    event = make_event(capacity=10)
    ines, solo = named("ines", "Inés", "García-López"), named("solo", "Teller")
    for user in (ines, solo):
        register(event.event_id, user_key(user), user_name=user.username)
    register(event.event_id, "key-lab-student", user_name="lab")  # a synthetic student: no account, no name
    rows = {a["user"]: (a["first_name"], a["last_name"])
            for a in api(staff_client, event.event_id).json()["attendees"]}
    assert rows == {"ines": ("Inés", "García-López"), "solo": ("Teller", ""), "lab": ("", "")}
    page = staff_client.get(f"/events/{event.event_id}/attendees/").text
    assert 'Inés García-López<br><span class="help">ines</span>' in page and "<th scope=\"row\">lab</th>" in page

    User.objects.filter(pk=ines.pk).update(first_name="Ines")  # she changed it on her account page
    table = list(csv.reader(io.StringIO(b"".join(
        staff_client.get(f"/events/{event.event_id}/attendees.csv").streaming_content).decode("utf-8-sig"))))
    header = table[0]
    by_user = {row[header.index("user")]: row for row in table[1:]}
    assert by_user["ines"][header.index("first_name")] == "Ines"
    assert by_user["ines"][header.index("last_name")] == "García-López"

    ines.delete()  # an erased account's name goes with its row
    assert api(staff_client, event.event_id, "?q=ines").json()["attendees"][0]["first_name"] == ""


def test_names_cost_one_query_a_page_and_a_formula_name_is_text_in_the_csv(moto_ddb, staff_client,
                                                                          django_assert_max_num_queries):
    event = make_event(capacity=10)
    for n in range(5):
        user = named(f"s{n}", "=cmd()" if n == 0 else f"First{n}", f"Last{n}")
        register(event.event_id, user_key(user), user_name=user.username)
    with django_assert_max_num_queries(1):
        page = attendees.attendee_page(event_id=event.event_id)
    assert len(page.items) == 5
    lines = list(attendees.attendee_csv(event_id=event.event_id))
    assert "'=cmd()" in lines[1]


# --- one page merged over the buckets (DynamoDB Local: the key conditions as DynamoDB evaluates them) ----------

CROWD = [f"{first}{n}" for first in ("Ann", "bea", "Cal", "dee", "Eli") for n in range(8)]  # 40 names


@pytest.fixture
def crowd(ddb):
    """40 attendees, their copies spread over the buckets: the first 30 hold seats, the last 10 wait."""
    event = make_event(capacity=30)
    for name in CROWD:
        register(event.event_id, f"key-{name}", user_name=name)
    return event


def every_page(event_id: str, *, limit: int, **filters) -> tuple[list[dict], int]:
    """All rows, following the cursors; and how many pages that took."""
    rows, cursor, pages = [], None, 0
    while True:
        page = attendees.attendee_page(event_id=event_id, cursor=cursor, limit=limit, **filters)
        assert len(page.items) <= limit
        rows.extend(page.items)
        pages += 1
        if page.next_cursor is None:
            return rows, pages
        cursor = page.next_cursor


def test_pages_merge_the_buckets_in_name_order(crowd):
    buckets = {Registration.bucket_for(r.registration_id) for r in selectors.event_registrations(
        event_id=crowd.event_id)}
    assert len(buckets) >= 12  # the list really is spread
    rows, pages = every_page(crowd.event_id, limit=7)
    assert [row["user"] for row in rows] == sorted(CROWD, key=str.casefold)
    assert pages in (6, 7)  # 40 rows by 7, and maybe one empty page when the last one ended exactly


def test_a_search_prefix_pages_across_buckets(crowd, staff_client):
    rows, _ = every_page(crowd.event_id, limit=3, search="CA")
    assert [row["user"] for row in rows] == [f"Cal{n}" for n in range(8)]
    # The same through the API, cursor round trip included.
    users, url = [], f"/api/events/{crowd.event_id}/attendees?q=dee&limit=3"
    while url:
        body = staff_client.get(url).json()
        users += [row["user"] for row in body["attendees"]]
        url = body["next"]
    assert users == [f"dee{n}" for n in range(8)]


def test_the_status_filter_pages_across_buckets(crowd):
    rows, _ = every_page(crowd.event_id, limit=3, status="waitlisted")
    waiting = CROWD[30:]
    assert [row["user"] for row in rows] == sorted(waiting, key=str.casefold)
    assert sorted(row["position"] for row in rows) == list(range(1, 11))
    rows, _ = every_page(crowd.event_id, limit=4, status="confirmed", search="e")
    assert [row["user"] for row in rows] == [name for name in sorted(CROWD[:30], key=str.casefold)
                                             if name.casefold().startswith("e")]


def test_each_bucket_reads_at_most_limit_items_a_page(crowd, monkeypatch):
    seen = []
    original = attendees._bucket_page

    def counting(partition, condition, filter_condition, limit):
        items, stopped_at = original(partition, condition, filter_condition, limit)
        seen.append((partition, limit, len(items)))
        return items, stopped_at

    monkeypatch.setattr(attendees, "_bucket_page", counting)
    with metered() as meter:
        attendees.attendee_page(event_id=crowd.event_id, limit=2, status="confirmed")
    assert len(seen) == REGISTRATION_BUCKETS == meter.requests["Query"]
    assert all(limit == 2 and found <= 2 for _, limit, found in seen)


def test_hostile_cursors_are_refused_with_a_clear_error(crowd, staff_client):
    from tems.errors import DomainError
    from tems.pagination import encode_cursor

    event_id = crowd.event_id
    first = attendees.attendee_page(event_id=event_id, limit=2, search="ann")
    scope = f"attendees:{event_id}::ann"
    hostile = {
        "another list's": first.next_cursor,  # used with another search
        "not a string": encode_cursor({"GSI1SK": {"N": "1"}}, scope=f"attendees:{event_id}::"),
        "outside the search": encode_cursor({"GSI1SK": {"S": "zed#1"}}, scope=scope),
        "far too long": encode_cursor({"GSI1SK": {"S": "ann" + "x" * 2000}}, scope=scope),
        "empty": encode_cursor({"GSI1SK": {"S": ""}}, scope=f"attendees:{event_id}::"),
    }
    for what, cursor in hostile.items():
        search = "" if what in ("not a string", "empty") else ("bea" if what == "another list's" else "ann")
        with pytest.raises(DomainError) as refused:
            attendees.attendee_page(event_id=event_id, search=search, cursor=cursor)
        assert refused.value.code == "invalid" and "cursor" in refused.value.detail, what
    assert_problem(api(staff_client, event_id, "?cursor=" + hostile["outside the search"]), 400)
