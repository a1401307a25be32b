"""Copying an event: a new event prefilled from an old one, its questions included; one tap makes one event
(DynamoDB Local: a double submit is a race of two requests with one key)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

from registrations import selectors
from registrations.errors import RegistrationError
from registrations.events import creation as event_creation
from registrations.events import services as event_services
from registrations.events.models import Event
from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import Question
from tests.helpers import assert_invariants_clean
from tests.race import race
from tests.registrations.helpers import make_event, register

DIET = Question(id="d1e7d1e7", label="Diet", kind="single", required=True, choices=("none", "vegetarian", "vegan"))
LATER = datetime(2031, 3, 1, 18, 0, tzinfo=UTC)


def listed() -> list[Event]:
    return list(Event.by_start.query(Event.COLLECTION))


def copy_form(key: str, **overrides) -> dict:
    data = {"title": "Open day", "description": "Tour", "location": "Hall", "starts_at": "2031-03-01T18:00",
            "capacity": "30", "reminder_hours": "24", "offer_hours": "12", "idempotency_key": key}
    return {**data, **overrides}


def copy_once(source_id: str, key: str):
    return event_services.event_copy_once(source_event_id=source_id, user_id="staff-key", idempotency_key=key,
                                          fingerprint="copy", title="Open day (spring)", starts_at=LATER,
                                          capacity=30, created_by="staffer", offer_hours=12)


def test_the_copy_page_is_prefilled_from_the_old_event(ddb, staff_client):
    source = make_event(capacity=30, title="Open day", location="Hall", description="Tour", offer_hours=12)
    page = staff_client.get(f"/events/{source.event_id}/copy/").content.decode()
    assert 'value="Open day"' in page and 'value="Hall"' in page and "Tour</textarea>" in page
    assert 'value="30"' in page and 'name="offer_hours" value="12"' in page
    assert re.search(r'name="idempotency_key" value="[0-9a-f-]{36}"', page)


def test_a_copy_of_an_event_still_ahead_shows_its_times_as_the_inputs_take_them(ddb, staff_client):
    starts = datetime(2031, 6, 1, 17, tzinfo=UTC)
    source = make_event(title="Open day", starts_at=starts, ends_at=starts + timedelta(hours=2),
                        time_zone="UTC")
    page = staff_client.get(f"/events/{source.event_id}/copy/").content.decode()
    # A datetime-local input takes "YYYY-MM-DDTHH:MM" only: a value with seconds and an offset shows as empty.
    assert re.search(r'name="ends_at" value="2031-06-01T19:00"', page), page
    assert re.search(r'name="starts_at" value="2031-06-01T17:00"', page)


def test_a_copy_keeps_the_questions_and_a_double_submit_makes_one_event(ddb, staff_client):
    source = make_event(capacity=30, title="Open day")
    register(source.event_id, "ann")
    question_services.questions_update(event_id=source.event_id, expected_version=0, questions=[DIET],
                                       updated_by="staff")
    key = str(uuid.uuid4())
    first = staff_client.post(f"/events/{source.event_id}/copy/", copy_form(key, title="Open day (spring)"))
    again = staff_client.post(f"/events/{source.event_id}/copy/", copy_form(key, title="Open day (spring)"))
    assert first.status_code == again.status_code == 302 and first["Location"] == again["Location"]
    # "Created" is said once, naming the source: the replayed tap created nothing to announce.
    said = [str(message) for message in staff_client.get(first["Location"]).context["messages"]]
    assert said == ["Created “Open day (spring)”, a copy of “Open day”."]
    copies = [event for event in listed() if event.title == "Open day (spring)"]
    assert len(copies) == 1
    copy = copies[0]
    assert (int(copy.capacity), copy.location, int(copy.offer_hours)) == (30, "Hall", 12)
    assert question_sets.questions_get(event_id=copy.event_id).questions == (DIET,)
    assert selectors.seats_for(event=copy).registered == 0  # nobody's registration comes along
    # The copy's shards carry its questions' version: answers are checked against them from the first tap.
    assert_invariants_clean()


def test_two_taps_at_once_with_one_key_make_one_event(ddb):
    source = make_event(capacity=30, title="Open day")
    key = str(uuid.uuid4())
    outcomes = race([lambda: copy_once(source.event_id, key)] * 2)
    assert outcomes[0].response.body == outcomes[1].response.body
    assert len([event for event in listed() if event.title == "Open day (spring)"]) == 1


def test_without_the_key_in_its_transaction_the_second_tap_is_not_answered_as_the_first(ddb, monkeypatch):
    """Broken, deliberately: the copy's record is not written with the event. A tap's event id follows from its
    key, so the second tap still makes no second event, but it is refused where it should get the first answer."""
    monkeypatch.setattr(event_creation, "add_completed_record", lambda transaction, **_: None)
    source = make_event(capacity=30, title="Open day")
    key = str(uuid.uuid4())

    def tap():
        try:
            return copy_once(source.event_id, key).response.status
        except RegistrationError as refused:
            return refused.code

    assert sorted(race([tap] * 2), key=str) == [201, "conflict"]
    assert len([event for event in listed() if event.title == "Open day (spring)"]) == 1


def test_hostile_copy_input_is_a_readable_form_error(ddb, staff_client):
    source = make_event(capacity=30, title="Open day")
    for hostile in ({"title": "x" * 5000}, {"capacity": "-1"}, {"capacity": "1e400"}, {"title": "bad\x00"},
                    {"starts_at": "99999-01-01T00:00"}, {"offer_hours": "9999"}):
        response = staff_client.post(f"/events/{source.event_id}/copy/", copy_form(str(uuid.uuid4()), **hostile))
        assert response.status_code in (200, 400), hostile
        assert 'class="field-error"' in response.content.decode() or "form-errors" in response.content.decode()
    assert staff_client.get("/events/no-such-event/copy/").status_code == 404
    assert len(listed()) == 1


def test_students_cannot_copy(ddb, student_client):
    source = make_event(capacity=30, title="Open day")
    assert student_client.get(f"/events/{source.event_id}/copy/").status_code == 403
    assert student_client.post(f"/events/{source.event_id}/copy/", copy_form(str(uuid.uuid4()))).status_code == 403
