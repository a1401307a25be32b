"""Finding events: facets written in the event's own transactions, searches and filters that combine, one bounded
read per page, public events for visitors, and a 400 (never a 5xx) for any input a search cannot take."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from registrations.events import index
from registrations.events import services as event_services
from registrations.events.models import Event, EventCancellation, EventFacet
from registrations.events.selectors import EventFilters, event_search
from tems.clock import utcnow
from tems.identity import user_key
from tems.metering import metered
from tests.registrations.helpers import make_event, register


def soon(days: float = 1) -> datetime:
    return (utcnow() + timedelta(days=days)).replace(microsecond=0)


def found(**filters) -> list[str]:
    return [event.title for event in event_search(filters=EventFilters(**filters), limit=50)[0].items]


def facets_stored(event_id: str) -> set[str]:
    return {entry.facet for entry in EventFacet.query(Event.pk_for(event_id),
                                                       EventFacet.sk.startswith(EventFacet.SK_PREFIX))}


def test_words_are_folded_capped_and_skip_stopwords():
    assert index.words_of("The Café of Python: an INTRO to python & Data-Science!") == [
        "cafe", "python", "intro", "data", "science"]
    assert len(index.words_of(" ".join(f"word{n}" for n in range(20)))) == index.MAX_WORDS
    assert index.words_of("a I & the") == []


def test_create_edit_and_cancel_keep_the_facets_in_step(ddb):
    event = make_event(title="Python workshop", starts_at=soon(), category="workshop", organizer="Code Club",
                       public=True)
    assert facets_stored(event.event_id) == {"word:python", "word:workshop", "category:workshop",
                                             "organizer:code club", "public"}
    assert found(text="python") == ["Python workshop"]

    # The edit removes the words it drops and puts the new ones, in its own transaction.
    event_services.event_update(event_id=event.event_id, expected_version=1, title="Rust workshop",
                                description="", location="", starts_at=soon(2), capacity=5, updated_by="staff",
                                category="talk", organizer="Code Club")
    assert facets_stored(event.event_id) == {"word:rust", "word:workshop", "category:talk", "organizer:code club"}
    assert found(text="python") == [] and found(text="rust") == ["Rust workshop"]
    assert found(category="workshop") == [] and found(category="talk") == ["Rust workshop"]

    event_services.event_cancel_once(event_id=event.event_id, user_id="staff", cancelled_by="staff",
                                     idempotency_key="7d0c3f0e-0d57-4b55-9d7c-3f1c1a7b9d10", fingerprint="f")
    assert facets_stored(event.event_id) == set()
    assert found(text="rust") == []


def test_an_edit_that_changes_nothing_found_writes_no_facet(ddb, monkeypatch):
    event = make_event(title="Chess night", starts_at=soon(), category="social")
    written = []
    original = index.replace_facets

    def spy(transaction, *, stored, edited):
        before = len(transaction.sent_order)
        original(transaction, stored=stored, edited=edited)
        written.append(len(transaction.sent_order) - before)

    monkeypatch.setattr(index, "replace_facets", spy)
    event_services.event_update(event_id=event.event_id, expected_version=1, title="Chess night",
                                description="Bring a board", location="", starts_at=event.starts_at, capacity=9,
                                updated_by="staff", category="social")
    assert written == [0]


def test_filters_combine(ddb):
    make_event(title="Python workshop", starts_at=soon(1), category="workshop", organizer="Code Club",
               online_url="https://meet.example.org/py")
    make_event(title="Python talk", starts_at=soon(2), category="talk", organizer="Code Club", location="Hall A")
    make_event(title="Python social", starts_at=soon(40), category="social", organizer="Chess Society",
               location="Bar")
    full = make_event(title="Python sprint", starts_at=soon(3), category="workshop", capacity=1,
                      organizer="Code Club", location="Lab 2")
    register(full.event_id, "someone")

    assert found(text="python") == ["Python workshop", "Python talk", "Python sprint", "Python social"]
    assert found(text="python", category="workshop") == ["Python workshop", "Python sprint"]
    assert found(text="python", category="workshop", mode="in_person") == ["Python sprint"]
    assert found(text="python", category="workshop", free_seats=True) == ["Python workshop"]
    assert found(organizer="  code   CLUB ", mode="online") == ["Python workshop"]
    assert found(text="python talk") == ["Python talk"]
    assert found(text="python", starts_before=soon(30)) == ["Python workshop", "Python talk", "Python sprint"]
    assert found(text="python", starts_from=soon(30)) == ["Python social"]
    assert found(mode="in_person", free_seats=True) == ["Python talk", "Python social"]


def test_a_filtered_page_is_one_query_and_one_read_of_its_events_however_few_match(ddb):
    for number in range(30):
        make_event(title=f"Python evening {number}", starts_at=soon(1 + number / 100), category="talk")
    make_event(title="Python workshop", starts_at=soon(2), category="workshop")
    with metered() as meter:
        page, _ = event_search(filters=EventFilters(text="python", category="workshop"), limit=10)
    # The first ten entries of the word's list hold no workshop: an empty page with a cursor, not more reads.
    assert page.items == [] and page.next_cursor is not None
    assert dict(meter.requests) == {"Query": 1}
    titles, cursor = [], page.next_cursor
    while cursor:
        with metered() as meter:
            page, _ = event_search(filters=EventFilters(text="python", category="workshop"), limit=10, cursor=cursor)
        assert meter.requests["Query"] == 1 and meter.total_requests <= 3
        titles += [event.title for event in page.items]
        cursor = page.next_cursor
    assert titles == ["Python workshop"]


def test_a_cursor_pages_only_its_own_search(ddb):
    for number in range(3):
        make_event(title=f"Yoga {number}", starts_at=soon(1 + number), category="sport")
    page, _ = event_search(filters=EventFilters(text="yoga"), limit=1)
    rest, _ = event_search(filters=EventFilters(text="yoga"), limit=5, cursor=page.next_cursor)
    assert [event.title for event in rest.items] == ["Yoga 1", "Yoga 2"]
    with pytest.raises(Exception, match="another list"):
        event_search(filters=EventFilters(text="yoga", category="sport"), limit=1, cursor=page.next_cursor)


# --- pages and the API ------------------------------------------------------------------------------------

def test_search_page_and_api_find_by_word(ddb, student_client):
    make_event(title="Robotics open lab", starts_at=soon(), category="workshop", location="Lab 1")
    make_event(title="Poetry reading", starts_at=soon(2))
    page = student_client.get("/events/?q=robotics").content.decode()
    assert "Robotics open lab" in page and "Poetry reading" not in page
    body = student_client.get("/api/events?q=ROBOTICS&category=workshop").json()
    assert [event["title"] for event in body["events"]] == ["Robotics open lab"]
    assert body["events"][0]["category"] == "workshop" and "online_url" not in body["events"][0]


@pytest.mark.parametrize("query", [
    "q=" + "x" * 101, "q=%00python", "q=the", "q=%26%26", "from=2027-13-01", "from=0001-01-01", "to=99999-01-01",
    "from=2027-05-02&to=2027-05-01", "category=nonsense", "category=%27%3B--", "mode=underwater",
    "organizer=" + "o" * 101, "cursor=garbage", "q=python&cursor=" + "A" * 2000, "q=%ED%A0%80",
])
def test_hostile_search_input_is_400_on_the_api_and_a_message_on_the_page(ddb, student_client, query):
    api = student_client.get(f"/api/events?{query}")
    assert api.status_code == 400 and api["Content-Type"] == "application/problem+json", (query, api.content)
    assert api.json()["code"] == "invalid"
    page = student_client.get(f"/events/?{query}")
    assert page.status_code == 400 and 'role="alert"' in page.content.decode()
    if "cursor" not in query:  # the calendar has no pages: a month is one read
        calendar = student_client.get(f"/events/calendar/?{query}")
        assert calendar.status_code == 400 and 'role="alert"' in calendar.content.decode()


@pytest.mark.parametrize("month", ["2027-13", "0000-01", "2027-1", "x", "2027-02-01", "99999-01"])
def test_a_month_that_is_not_one_is_a_readable_400(ddb, student_client, month):
    response = student_client.get(f"/events/calendar/?month={month}")
    assert response.status_code == 400 and "Choose a month" in response.content.decode()


def test_calendar_shows_the_month_events_on_their_days(ddb, student_client):
    make_event(title="Spring fair", starts_at=datetime(2031, 4, 14, 12, tzinfo=UTC), category="social")
    make_event(title="May ball", starts_at=datetime(2031, 5, 3, 20, tzinfo=UTC))
    page = student_client.get("/events/calendar/?month=2031-04").content.decode()
    assert "April 2031" in page and "Spring fair" in page and "May ball" not in page
    assert "No events this month" not in page
    assert 'datetime="2031-04-14"' in page and "?month=2031-05" in page and "?month=2031-03" in page
    assert "Spring fair" not in student_client.get("/events/calendar/?month=2031-04&category=talk").content.decode()


def test_visitors_see_public_events_only_and_register_after_logging_in(ddb, client):
    listed = make_event(title="Open lecture", starts_at=soon(), public=True, online_url="https://x.example/l")
    make_event(title="Members meeting", starts_at=soon(2))
    page = client.get("/events/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Open lecture" in body and "Members meeting" not in body and "Log in" in body
    detail = client.get(f"/events/{listed.event_id}/").content.decode()
    assert "Log in to register" in detail and "x.example" not in detail
    assert client.get("/events/?q=members").content.decode().count('class="event-card"') == 0
    assert client.get("/events/calendar/").status_code == 200


def test_a_private_event_page_asks_a_visitor_to_log_in(ddb, client):
    hidden = make_event(title="Members meeting", starts_at=soon())
    response = client.get(f"/events/{hidden.event_id}/")
    assert response.status_code == 302 and "next=" in response["Location"]


def test_the_online_link_is_for_confirmed_registrants(ddb, student_client, student):
    event = make_event(title="Webinar", starts_at=soon(), online_url="https://meet.example.org/w")
    assert "meet.example.org" not in student_client.get(f"/events/{event.event_id}/").content.decode()
    register(event.event_id, user_key(student))
    assert "meet.example.org/w" in student_client.get(f"/events/{event.event_id}/").content.decode()


def _edit_between_the_cancels_read_and_write(monkeypatch, *, pinned: bool) -> None:
    """An edit that renames the event lands right after the cancellation read it. ``pinned`` False is the broken
    variant: the cancellation's write not conditioned on the version it read."""
    original = EventCancellation.get
    edited = []

    def get(*args, **kwargs):
        read = original(*args, **kwargs)
        if not edited:
            edited.append(event_services.event_update(
                event_id=read.event_id, expected_version=int(read.version), title="Renamed gala", description="",
                location="", starts_at=read.starts_at, capacity=5, updated_by="colleague", category="social"))
        if not pinned:
            read.version = None
        return read

    monkeypatch.setattr(EventCancellation, "get", get)


@pytest.mark.parametrize("pinned", [True, False])
def test_a_cancel_racing_an_edit_removes_the_facets_the_edit_wrote(ddb, monkeypatch, pinned):
    event = make_event(title="Winter gala", starts_at=soon(), category="social")
    _edit_between_the_cancels_read_and_write(monkeypatch, pinned=pinned)
    event_services.event_cancel_once(event_id=event.event_id, user_id="staff", cancelled_by="staff",
                                     idempotency_key="3c1d2e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f", fingerprint="f")
    if pinned:  # the write failed its version condition, read again and removed what the edit had written
        assert facets_stored(event.event_id) == set() and found(text="renamed") == []
    else:  # the broken variant removed the facets it had read and left the edit's: a cancelled event is found
        assert "word:renamed" in facets_stored(event.event_id) and found(text="renamed") == ["Renamed gala"]
