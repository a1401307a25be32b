"""The one cursor helper: signed, scoped, one Query per page, no skip or repeat when items arrive between pages."""

from __future__ import annotations

from datetime import timedelta

import pytest

from registrations.events.models import Event
from tems.clock import utcnow
from tems.errors import DomainError
from tems.pagination import decode_cursor, encode_cursor, page_size, query_page, start_key_string


def _event(number: int, start) -> None:
    Event(*Event.key_for(f"e{number:04d}"), event_id=f"e{number:04d}", title=f"Event {number}",
          starts_at=start + timedelta(minutes=number), capacity=10,
          gsi1sk=Event.listing_key(start + timedelta(minutes=number), f"e{number:04d}")).save()


def _page(cursor, limit=3):
    return query_page(Event.by_start.query, Event.COLLECTION, scope="events", cursor=cursor, limit=limit,
                      convert=lambda event: event.event_id)


def test_pages_walk_the_whole_list_once_even_when_items_arrive_between_pages(moto_ddb):
    start = utcnow()
    for number in range(0, 20, 2):
        _event(number, start)
    seen, cursor = [], None
    first = _page(None)
    seen += first.items
    cursor = first.next_cursor
    # Items land before and after the cursor's position while the client is between pages.
    _event(1, start)
    _event(19, start)
    while cursor:
        page = _page(cursor)
        assert len(page) <= 3
        seen += page.items
        cursor = page.next_cursor
    assert seen == sorted(set(seen))
    assert seen[:3] == ["e0000", "e0002", "e0004"]
    assert "e0019" in seen and "e0001" not in seen


def test_a_tampered_or_foreign_cursor_is_invalid():
    token = encode_cursor({"PK": {"S": "EVENT#a"}}, scope="events")
    assert decode_cursor(token, scope="events") == {"PK": {"S": "EVENT#a"}}
    with pytest.raises(DomainError) as foreign:
        decode_cursor(token, scope="attendees:a")
    assert foreign.value.code == "invalid"
    for bad in (token[:-2] + "xx", "garbage", "x" * 5000):
        with pytest.raises(DomainError):
            decode_cursor(bad, scope="events")
    assert decode_cursor(None, scope="events") is None and encode_cursor(None, scope="events") is None


@pytest.mark.parametrize("raw", ["0", "51", "-1", "1.5", "ten"])
def test_page_size_is_bounded(raw):
    with pytest.raises(DomainError):
        page_size(raw)


def test_page_size_defaults_and_accepts_the_bound():
    assert page_size(None) == 20 and page_size("50") == 50 and page_size("1") == 1


def test_a_start_key_attribute_is_read_as_either_client_hands_it_over():
    assert start_key_string({"GSI1SK": {"S": "2030#a"}}, "GSI1SK") == start_key_string({"GSI1SK": "2030#a"}, "GSI1SK")
    for start in ({}, {"GSI1SK": {"N": "1"}}, {"GSI1SK": 3}):
        with pytest.raises(DomainError) as refused:
            start_key_string(start, "GSI1SK")
        assert refused.value.code == "invalid"
