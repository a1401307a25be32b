"""A waitlisted registration's event-side copy is its waitlist entry (a join is six items, not seven, 2 write
units fewer on the table at the end of a burst)."""

from __future__ import annotations

import pytest

from registrations import attendees, selectors, services
from registrations.models import CONFIRMED, WAITLISTED, Registration
from registrations.reports.counting import REPORT
from registrations.write_rules import EVENT_REGISTRATION, WAITLIST_ENTRY
from tems.transactions import LabelledTransaction
from tests.helpers import assert_invariants_clean, broken_invariants
from tests.registrations.helpers import make_event, register


@pytest.fixture
def committed(monkeypatch) -> list[list[str]]:
    """The labels of every transaction committed, in order."""
    seen: list[list[str]] = []
    original = LabelledTransaction.commit

    def spy(self):
        seen.append(list(self.sent_order))
        return original(self)

    monkeypatch.setattr(LabelledTransaction, "commit", spy)
    return seen


def event_copy(event_id: str, registration_id: str) -> Registration | None:
    try:
        return Registration.get(*Registration.event_key_for(event_id, registration_id), consistent_read=True)
    except Registration.DoesNotExist:
        return None


def listed(event_id: str) -> list[tuple[str, str, int | None]]:
    return [(row["user"], row["status"], row["position"])
            for row in attendees.attendee_page(event_id=event_id, limit=50).items]


def test_a_join_writes_seven_items_and_its_entry_is_the_event_side_copy(ddb, committed):
    event = make_event(capacity=1)
    ann = register(event.event_id, "ann", user_name="Ann").data
    committed.clear()
    joined = register(event.event_id, "bob", user_name="Bob").data
    assert joined["status"] == WAITLISTED
    join = committed[-1]
    # Six of its own and the report's count (docs/reports.md).
    assert len(join) == 7 and WAITLIST_ENTRY in join and EVENT_REGISTRATION not in join, join
    assert sum(label.startswith(REPORT) for label in join) == 1, join
    assert event_copy(event.event_id, joined["registration_id"]) is None
    (entry,) = selectors.waitlist_entries(event_id=event.event_id)
    assert (entry.user_name, entry.status) == ("Bob", WAITLISTED)
    assert listed(event.event_id) == [("Ann", CONFIRMED, None), ("Bob", WAITLISTED, 1)]
    assert {(r.registration_id, r.status) for r in selectors.event_registrations(event_id=event.event_id)} == {
        (ann["registration_id"], CONFIRMED), (joined["registration_id"], WAITLISTED)}
    assert_invariants_clean()


def test_a_promotion_writes_the_confirmed_copy_from_the_entry(ddb):
    event = make_event(capacity=1)
    ann = register(event.event_id, "ann", user_name="Ann").data
    bob = register(event.event_id, "bob", user_name="Bob").data
    services.registration_cancel(user_id="ann", registration_id=ann["registration_id"])
    copy = event_copy(event.event_id, bob["registration_id"])
    assert copy is not None and (copy.status, copy.user_name, copy.ticket) == (CONFIRMED, "Bob", None)
    assert copy.created_at.isoformat() == bob["created_at"] and copy.promoted_at is not None
    assert copy.shard is not None  # its cancel frees the shard it holds a seat in
    assert (copy.gsi1pk, copy.gsi1sk) == Registration.attendee_index_key_for(event.event_id, "Bob",
                                                                              bob["registration_id"])
    assert selectors.waitlist_entries(event_id=event.event_id) == []
    assert listed(event.event_id) == [("Bob", CONFIRMED, None)]
    assert_invariants_clean()
    services.registration_cancel(user_id="bob", registration_id=bob["registration_id"])
    assert listed(event.event_id) == [] and event_copy(event.event_id, bob["registration_id"]) is None
    assert_invariants_clean()


def test_a_waitlisted_cancel_removes_the_entry_that_was_its_copy(ddb):
    event = make_event(capacity=1)
    register(event.event_id, "ann", user_name="Ann")
    bob = register(event.event_id, "bob", user_name="Bob").data
    services.registration_cancel(user_id="bob", registration_id=bob["registration_id"])
    assert listed(event.event_id) == [("Ann", CONFIRMED, None)]
    assert selectors.waitlist_entries(event_id=event.event_id) == []
    assert_invariants_clean()


def test_the_invariants_see_an_entry_whose_student_copy_is_gone(ddb):
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    bob = register(event.event_id, "bob").data
    Registration(*Registration.user_key_for("bob", bob["registration_id"])).delete()
    assert set(broken_invariants()) == {"every claim has both registration items and every registration its claim",
                        "waitlist entries are unique and in ticket order",
                        "every report figure equals a recount of the items it counts"}
