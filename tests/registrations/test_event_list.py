"""The event list: upcoming soonest first, past on its own view, one bounded Query per page, signed cursors."""

from __future__ import annotations

from datetime import timedelta

import pytest

from registrations.events.models import Event
from tems.clock import utcnow
from tems.metering import metered


def seed(numbers, *, hours: int = 1) -> None:
    """Events ``e0000``.. starting ``number`` hours from now (negative: in the past)."""
    now = utcnow()
    with Event.batch_write() as batch:
        for number in numbers:
            starts = now + timedelta(hours=hours * number)
            event_id = f"e{number + 5000:05d}"
            batch.save(Event(*Event.key_for(event_id), event_id=event_id, title=f"Event {number}",
                             starts_at=starts, capacity=10, version=1, gsi1sk=Event.listing_key(starts, event_id)))


def titles(body: dict) -> list[str]:
    return [event["title"] for event in body["events"]]


def walk(client, url: str) -> list[str]:
    seen = []
    while url:
        body = client.get(url).json()
        assert len(body["events"]) <= 50
        seen += titles(body)
        url = body["next"]
    return seen


def test_api_pages_upcoming_soonest_first_and_past_apart(ddb, student_client):
    seed(range(-3, 0))
    seed(range(1, 8))
    first = student_client.get("/api/events?limit=3").json()
    assert titles(first) == ["Event 1", "Event 2", "Event 3"]
    assert first["next"].startswith("http://testserver/api/events?") and "cursor=" in first["next"]
    assert walk(student_client, "/api/events?limit=3") == [f"Event {n}" for n in range(1, 8)]
    assert walk(student_client, "/api/events?past=1&limit=2") == ["Event -1", "Event -2", "Event -3"]


def test_api_last_page_has_null_next(ddb, student_client):
    seed(range(1, 3))
    assert student_client.get("/api/events").json() == {
        "events": student_client.get("/api/events").json()["events"], "next": None}


def test_every_page_is_one_query_at_any_number_of_events(ddb, student_client):
    seed(range(-150, 0))
    seed(range(1, 151))
    url = "/api/events?limit=50"
    pages = 0
    while url:
        with metered() as meter:
            body = student_client.get(url).json()
        assert dict(meter.requests) == {"Query": 1}
        assert len(body["events"]) <= 50
        pages += 1
        url = body["next"]
    assert pages in (3, 4)  # 150 upcoming events in pages of 50 (plus, at most, one empty last page)


def test_cursor_survives_events_added_between_pages(ddb, student_client):
    seed(range(2, 20, 2))
    first = student_client.get("/api/events?limit=3").json()
    assert titles(first) == ["Event 2", "Event 4", "Event 6"]
    seed([1, 5, 19])  # one before the cursor, one just behind it, one at the end
    rest = walk(student_client, first["next"])
    assert rest == ["Event 8", "Event 10", "Event 12", "Event 14", "Event 16", "Event 18", "Event 19"]


@pytest.mark.parametrize("cursor", ["garbage", "x" * 5000, ""])
def test_tampered_cursor_is_400_problem(ddb, student_client, cursor):
    seed(range(1, 5))
    good = student_client.get("/api/events?limit=1").json()["next"].split("cursor=")[1]
    tampered = good[:-2] + ("AA" if not good.endswith("AA") else "BB")
    for bad in (cursor or tampered,):
        response = student_client.get(f"/api/events?cursor={bad}")
        assert response.status_code == 400
        assert response["Content-Type"] == "application/problem+json"


def test_cursor_of_upcoming_list_does_not_page_past_list(ddb, student_client):
    seed(range(-3, 4))
    upcoming = student_client.get("/api/events?limit=1").json()["next"].split("cursor=")[1]
    assert student_client.get(f"/api/events?past=1&cursor={upcoming}").status_code == 400


def test_limit_over_50_is_400(ddb, student_client):
    assert student_client.get("/api/events?limit=51").status_code == 400


# --- pages --------------------------------------------------------------------------------------------------

def test_page_shows_first_page_and_a_plain_more_link(ddb, student_client):
    seed(range(1, 26))
    page = student_client.get("/events/").content.decode()
    assert "Event 20" in page and "Event 21" not in page
    assert "More events" in page and 'href="http://testserver/events/?cursor=' in page
    link = page.split('href="http://testserver/events/?cursor=')[1].split('"')[0]
    # Without JavaScript the link is a whole page: the next events, with the layout around them.
    second = student_client.get(f"/events/?cursor={link}").content.decode()
    assert "<html" in second.lower() and "Event 21" in second and "Event 25" in second and "Event 20<" not in second


def test_htmx_more_returns_only_the_next_cards(ddb, student_client):
    seed(range(1, 26))
    page = student_client.get("/events/").content.decode()
    url = page.split('hx-get="')[1].split('"')[0].replace("&amp;", "&")
    fragment = student_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment.lower() and "<h1" not in fragment
    assert fragment.count('class="event-card"') == 5 and "Event 21" in fragment
    assert "More events" not in fragment  # the last page has no row to ask for more


def test_past_view_is_most_recent_first(ddb, student_client):
    seed(range(-3, 2))
    page = student_client.get("/events/past/").content.decode()
    assert page.index("Event -1") < page.index("Event -2") < page.index("Event -3")
    assert "Event 1<" not in page
    assert "Event -1" not in student_client.get("/events/").content.decode()


def test_tampered_cursor_on_page_is_readable_400(ddb, student_client):
    response = student_client.get("/events/?cursor=nonsense")
    assert response.status_code == 400 and "This cursor is not valid" in response.content.decode()


def test_next_page_still_works_after_the_last_event_shown_has_started(ddb, student_client, monkeypatch):
    from registrations import selectors

    seed(range(1, 6))
    first = student_client.get("/api/events?limit=2").json()
    assert titles(first) == ["Event 1", "Event 2"]
    later = utcnow() + timedelta(hours=2, minutes=30)  # events 1 and 2 have started, so has the cursor's
    monkeypatch.setattr(selectors, "utcnow", lambda: later)
    response = student_client.get(first["next"])
    assert response.status_code == 200
    assert titles(response.json()) == ["Event 3", "Event 4"]
