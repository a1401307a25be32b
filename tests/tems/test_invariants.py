"""check_invariants as a stream: parallel scan segments, aggregates that do not grow with the table, a report."""

from __future__ import annotations

import tracemalloc
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from inventory import services as inventory_services
from registrations.events.models import Event
from registrations.models import CONFIRMED, WAITLISTED, Registration, RegistrationClaim
from registrations.reports.models import EventReportDay
from registrations.seating.models import SeatGate, SeatShard, WaitlistQueue
from tems.invariants import check_all, check_items
from tests.helpers import assert_invariants_clean
from tests.registrations.helpers import make_event, register

EVENTS = 12


@pytest.fixture
def populated(ddb):
    """Twelve events, each with one confirmed and one waitlisted student, and an inventory item with history."""
    events = [make_event(capacity=1, title=f"Event {n}") for n in range(EVENTS)]
    for event in events:
        register(event.event_id, f"ann-{event.event_id}")
        register(event.event_id, f"bob-{event.event_id}")
    inventory_services.item_create(sku="MUG", name="Mug", quantity=3, actor="ana")
    inventory_services.item_adjust(sku="MUG", delta=-1, reason="sold", actor="bo")
    return events


def test_clean_table_passes_in_any_number_of_segments(populated):
    # Claims, event-side and user-side registrations live in different partitions, hence different segments:
    # a clean result at 8 segments shows the aggregates are joined across segments. One world, read three ways.
    for segments in (1, 3, 8):
        assert_invariants_clean(segments=segments)


def test_a_break_planted_in_every_event_is_found_whichever_segment_holds_it(populated):
    for event in populated:
        SeatShard(*SeatShard.key_for(event.event_id, 0)).update(actions=[SeatShard.taken.add(1)])
    problems = check_all(segments=4)["event counters match their registration items"]
    assert sorted(problems) == sorted(f"EVENT#{event.event_id}: 2 seats taken but 1 confirmed"
                                      for event in populated)


def test_a_user_side_registration_gone_missing_is_found_across_segments(populated):
    victim = populated[5]
    [user_side] = Registration.query(Registration.user_pk_for(f"ann-{victim.event_id}"),
                                     Registration.sk.startswith(Registration.SK_PREFIX))
    user_side.delete()
    problems = check_all(segments=6)["every claim has both registration items and every registration its claim"]
    assert problems == [f"event {victim.event_id}: 2 claim(s) but 1 user-side registrations, or the "
                        f"registrations or statuses they name differ"]


def test_command_reports_what_it_checked_and_how_long(populated):
    out = StringIO()
    call_command("check_invariants", "--segments", "3", stdout=out)
    text = out.getvalue()
    assert "BROKEN" not in text and "\r" not in text  # no progress bar when stdout is not a terminal
    assert "in 3 segment(s)" in text and " s." in text
    assert f"{EVENTS:,} Event" in text and "Checked " in text


def test_command_rejects_nonsense_segments(ddb):
    with pytest.raises(CommandError):
        call_command("check_invariants", "--segments", "0", stdout=StringIO())


def _synthetic(events: int, per_event: int):
    """A stream of consistent registration items, produced one at a time as a scan would: each event with its one
    seat shard (every seat taken), its gate and its queue."""
    for e in range(events):
        event_id = f"e{e}"
        yield {"PK": Event.pk_for(event_id), "SK": Event.METADATA, "entity": "Event", "event_id": event_id,
               "capacity": per_event, "seat_shards": 1, "sliced": per_event}
        shard = SeatShard.key_for(event_id, 0)
        yield {"PK": shard[0], "SK": shard[1], "entity": "SeatShard", "event_id": event_id, "shard": 0, "shards": 1,
               "capacity": per_event, "taken": per_event, "gate": 1}
        gate = SeatGate.key_for(event_id)
        yield {"PK": gate[0], "SK": gate[1], "entity": "SeatGate", "event_id": event_id, "state": 1, "shards": 1}
        queue = WaitlistQueue.key_for(event_id)
        yield {"PK": queue[0], "SK": queue[1], "entity": "WaitlistQueue", "event_id": event_id, "seq": 0}
        # The report's day item: every registration was made on the one day it counts.
        yield {"PK": EventReportDay.pk_for(event_id, 0), "SK": EventReportDay.SK_PREFIX + "2027-01-04",
               "entity": "EventReportDay", "event_id": event_id, "day": "2027-01-04", "registrations": per_event}
        for r in range(per_event):
            registration = {"event_id": event_id, "user_id": f"u{r}", "registration_id": f"r{e}-{r}",
                            "status": CONFIRMED, "shard": 0, "created_at": "2027-01-04T09:00:00.000000+0000"}
            keys = {"claim": RegistrationClaim.key_for(event_id, f"u{r}"),
                    "event": Registration.event_key_for(event_id, f"r{e}-{r}"),
                    "user": Registration.user_key_for(f"u{r}", f"r{e}-{r}")}
            yield {"PK": keys["claim"][0], "SK": keys["claim"][1], "entity": "RegistrationClaim", **registration}
            yield {"PK": keys["event"][0], "SK": keys["event"][1], "entity": "Registration", **registration}
            yield {"PK": keys["user"][0], "SK": keys["user"][1], "entity": "Registration", **registration}


def _peak_bytes(events: int, per_event: int) -> int:
    tracemalloc.start()
    try:
        report = check_items(_synthetic(events, per_event))
        assert not any(report.results.values()), report.results
        assert report.items == events * (5 + 3 * per_event)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_number_of_items():
    small = _peak_bytes(10, 100)      # 3,050 items
    # 60,050 items: twenty times as many, same ten events. Holding as little as 10 bytes an item would put the
    # peak 600 KB over the small run's, three times the margin.
    large = _peak_bytes(10, 2_000)
    assert large < small * 1.5 + 200_000, (small, large)


def test_the_stream_still_catches_a_waitlisted_registration_without_its_entry():
    items = list(_synthetic(1, 3))
    items[1]["taken"], items[1]["waiting"] = 2, 1  # the shard: two seats taken, one waiting in its lane
    for item in items[-3:]:
        item["status"] = WAITLISTED
    [item for item in items if item["SK"].startswith(Registration.SK_PREFIX)][-1]["ticket"] = 1
    problems = check_items(iter(items)).results["waitlist entries are unique and in ticket order"]
    assert problems == ["EVENT#e0: 0 waitlist entries but 1 waitlisted registrations, or the registrations or "
                        "tickets they name differ"]
