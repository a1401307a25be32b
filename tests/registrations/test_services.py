"""Event writes on DynamoDB Local: conditional creates and version-checked edits."""

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from threading import Barrier

import pytest

from registrations import selectors, services
from registrations.errors import RegistrationError
from registrations.models import EventSeats

STARTS = datetime(2027, 5, 1, 9, 0, tzinfo=UTC)


def make_event(**overrides):
    fields = {"title": "Open day", "starts_at": STARTS, "capacity": 5, "created_by": "staff"}
    return services.event_create(**{**fields, **overrides})


def edit(event_id, version, **changes):
    fields = {"title": "Open day", "description": "", "location": "", "starts_at": STARTS, "capacity": 5}
    return services.event_update(
        event_id=event_id, expected_version=version, updated_by="editor", **{**fields, **changes}
    )


def test_create_with_taken_id_is_refused_by_condition(ddb):
    make_event(event_id="fixed")
    with pytest.raises(RegistrationError) as caught:
        make_event(event_id="fixed", title="Impostor")
    assert caught.value.code == "conflict"
    assert selectors.event_get(event_id="fixed").title == "Open day"


def test_edit_at_current_version_applies_and_bumps_version(ddb):
    event = make_event()
    edit(event.event_id, 1, title="Open day (moved)", capacity=8)
    stored = selectors.event_get(event_id=event.event_id)
    assert (stored.title, stored.capacity, stored.version, stored.updated_by) == ("Open day (moved)", 8, 2, "editor")


def test_stale_edit_is_refused_and_reports_the_stored_version(ddb):
    event = make_event()
    edit(event.event_id, 1, title="Theirs")
    with pytest.raises(RegistrationError) as caught:
        edit(event.event_id, 1, title="Mine")
    assert caught.value.code == "conflict"
    assert caught.value.extra["current"]["title"] == "Theirs"
    assert caught.value.extra["current"]["version"] == 2
    assert selectors.event_get(event_id=event.event_id).title == "Theirs"


def test_edit_never_touches_the_seat_counters(ddb):
    event = make_event()
    # A registration (issue 3) moves the counters without a version bump; simulate one.
    EventSeats(*EventSeats.key_for(event.event_id)).update(actions=[EventSeats.registered_count.add(3)])
    stored = selectors.event_get(event_id=event.event_id)
    edit(event.event_id, stored.version, title="Renamed")
    assert selectors.event_get(event_id=event.event_id).registered_count == 3


def test_capacity_cannot_drop_below_seats_taken(ddb):
    event = make_event()
    EventSeats(*EventSeats.key_for(event.event_id)).update(actions=[EventSeats.registered_count.add(4)])
    version = selectors.event_get(event_id=event.event_id).version
    with pytest.raises(RegistrationError) as caught:
        edit(event.event_id, version, capacity=3)
    assert caught.value.code == "invalid" and "capacity" in caught.value.errors


def test_edit_of_missing_event_is_not_found(ddb):
    with pytest.raises(RegistrationError) as caught:
        edit("ghost", 1)
    assert caught.value.code == "not_found"


def test_concurrent_edits_from_the_same_version_let_exactly_one_win(ddb):
    event = make_event()
    writers = 8
    barrier = Barrier(writers)

    def attempt(n):
        barrier.wait()
        try:
            edit(event.event_id, 1, title=f"writer {n}")
            return n
        except RegistrationError as error:
            assert error.code == "conflict"
            return None

    with ThreadPoolExecutor(writers) as pool:
        winners = [n for n in pool.map(attempt, range(writers)) if n is not None]
    assert len(winners) == 1
    stored = selectors.event_get(event_id=event.event_id)
    assert stored.title == f"writer {winners[0]}" and stored.version == 2


def test_listing_puts_upcoming_first_soonest_first(ddb):
    make_event(event_id="later", starts_at=datetime(2027, 6, 1, tzinfo=UTC))
    make_event(event_id="sooner", starts_at=datetime(2027, 5, 1, tzinfo=UTC))
    make_event(event_id="past", starts_at=datetime(2020, 1, 1, tzinfo=UTC))
    upcoming, past = selectors.event_list(now=datetime(2026, 1, 1, tzinfo=UTC))
    assert [e.event_id for e in upcoming] == ["sooner", "later"]
    assert [e.event_id for e in past] == ["past"]
