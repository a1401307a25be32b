"""``manage.py upgrade_events``: a table holding every older shape of an event is brought to the current one,
twice changes nothing, a stopped run resumes, and the randomized history with faults then keeps every promise on
the upgraded event (registrations.services.upgrade)."""

import io
from collections import Counter

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from registrations import attendees, selectors
from registrations.models import (
    CONFIRMED,
    CURRENT_LAYOUT,
    Event,
    EventSeats,
    Registration,
    RegistrationClaim,
    SeatGate,
    WaitlistDepartures,
    WaitlistEntry,
    WaitlistQueue,
    layout_of,
)
from registrations.seating import positions, shards
from registrations.services import registration_cancel
from tests.helpers import assert_invariants_clean, broken_invariants
from tests.registrations.helpers import (
    as_before_entries_carried_it,
    as_before_the_lanes,
    as_confirmed_before_the_shards,
    into_legacy_layout,
    make_event,
    register,
    spaced_clock,
)
from tests.registrations.test_history import run_history


def before_the_shards() -> str:
    """As stored before the seat shards (and so before the gate, the queue item, the registration layout and the
    attendee index): three seats taken on the event's own item, claims and copies in its partition."""
    event_id = make_event(capacity=5).event_id
    for n in range(3):
        register(event_id, f"old{n}", user_name=f"Old {n}")
    into_legacy_layout(event_id)
    for shard in shards.shards_get(event_id=event_id, count=shards.shard_count(5)):
        shard.delete()
    SeatGate(*SeatGate.key_for(event_id)).delete()
    WaitlistQueue(*WaitlistQueue.key_for(event_id)).delete()
    EventSeats(*EventSeats.key_for(event_id)).update(actions=[
        EventSeats.registered_count.set(3), EventSeats.seat_shards.remove(), EventSeats.sliced.remove()])
    for n in range(3):
        claim = RegistrationClaim.get(*RegistrationClaim.legacy_key_for(event_id, f"old{n}"), consistent_read=True)
        for item in (claim, Registration(*Registration.user_key_for(f"old{n}", claim.registration_id)),
                     Registration(*Registration.legacy_event_key_for(event_id, claim.registration_id))):
            item.update(actions=[type(item).shard.remove()])
    return event_id


def before_the_gate() -> str:
    """Shards whose gate lives only on them: a full event whose waiting list is open on every lane."""
    event_id = make_event(capacity=2).event_id
    for n in range(3):
        register(event_id, f"g{n}")
    SeatGate(*SeatGate.key_for(event_id)).delete()
    return event_id


def before_the_queue() -> str:
    """Blocks claimed on the event's item: its sequence and ``left`` there, no queue item."""
    event_id = make_event(capacity=1).event_id
    for n in range(3):
        register(event_id, f"q{n}")
    queue = WaitlistQueue.get(*WaitlistQueue.key_for(event_id), consistent_read=True)
    EventSeats(*EventSeats.key_for(event_id)).update(actions=[
        EventSeats.waitlist_seq.set(int(queue.seq)), EventSeats.waitlist_left.set(int(queue.left or 0))])
    queue.delete()
    return event_id


def before_the_departure_tree() -> str:
    """Entries that left the waiting list without being counted."""
    event_id = make_event(capacity=0).event_id
    for n in range(6):
        register(event_id, f"w{n}")
    for user in ("w1", "w3"):
        claim = selectors.claim_get(event_id=event_id, user_id=user)
        registration_cancel(user_id=user, registration_id=claim.registration_id)
    for node in WaitlistDepartures.query(Event.pk_for(event_id), WaitlistDepartures.sk.startswith("WAITLEFT#")):
        node.delete()
    return event_id


def before_the_index() -> str:
    """Event-side copies with no attendee index key."""
    event_id = make_event(capacity=3).event_id
    for name in ("Ann", "Bob"):
        register(event_id, name.lower(), user_name=name)
    for registration in selectors.event_registrations(event_id=event_id):
        registration.update(actions=[Registration.gsi1pk.remove(), Registration.gsi1sk.remove()])
    return event_id


def before_the_lanes() -> str:
    """A waiting list from before the lanes, and seats from before the registrations named their shard: a full
    event of two shards whose first three waiting students' entries sit bare in its own partition (their
    registrations keep waitlisted copies), counted on its ``waitlist_count``; one more joined a lane since; two
    of the seated name no shard."""
    event_id = make_event(capacity=4).event_id
    for n in range(4):
        register(event_id, f"seated{n}", user_name=f"Seated {n}")
    clock = spaced_clock()  # tickets in the order of the joins: those from before the lanes first
    for n in range(3):
        register(event_id, f"early{n}", user_name=f"Early {n}", clock=clock)
    for entry in selectors.waitlist_entries(event_id=event_id):
        as_before_the_lanes(entry)
    register(event_id, "later", user_name="Later", clock=clock)  # a lane's ticket, behind every one before
    for user in ("seated0", "seated2"):
        as_confirmed_before_the_shards(event_id, user)
    return event_id


def before_entries_carried_them() -> str:
    """Lane entries that do not carry their registration: each has a waitlisted event-side copy of its own."""
    event_id = make_event(capacity=1).event_id
    for user in ("c0", "c1", "c2"):
        register(event_id, user, user_name=user.upper())
    for entry in selectors.waitlist_entries(event_id=event_id):
        as_before_entries_carried_it(entry)
    return event_id


def _read(model, key):
    try:
        return model.get(*key, consistent_read=True)
    except model.DoesNotExist:
        return None


def assert_current(event_id: str) -> None:
    """The event in the shape every write path expects, its positions exact and every registration listed."""
    event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    assert layout_of(event.layout) == CURRENT_LAYOUT and event.seat_shards
    read = shards.shards_get(event_id=event_id, count=int(event.seat_shards))
    assert len(read) == int(event.seat_shards) and {layout_of(s.layout) for s in read} == {CURRENT_LAYOUT}
    gate, queue = _read(SeatGate, SeatGate.key_for(event_id)), _read(WaitlistQueue, WaitlistQueue.key_for(event_id))
    assert gate is not None and int(gate.shards) == int(event.seat_shards)
    assert queue is not None and queue.claim_last is not None
    assert not list(RegistrationClaim.query(Event.pk_for(event_id),
                                            RegistrationClaim.sk.startswith(RegistrationClaim.SK_PREFIX)))
    assert not int(event.waitlist_count or 0) and event.giving_shards is None
    assert not list(WaitlistEntry.query(WaitlistEntry.legacy_pk_for(event_id),
                                        WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX)))
    waiting = selectors.waitlist_entries(event_id=event_id)
    assert all(entry.carries_registration and entry.lane is not None for entry in waiting)
    assert sum(int(lane.waiting or 0) for lane in read) == len(waiting)
    places = positions.positions(tickets=[(event_id, int(entry.ticket)) for entry in waiting])
    assert [places[(event_id, int(entry.ticket))] for entry in waiting] == list(range(1, len(waiting) + 1))
    # Every confirmed registration names the shard that counts its seat, as many as each shard counts.
    confirmed = [r for r in selectors.event_registrations(event_id=event_id) if r.status == CONFIRMED]
    assert all(r.shard is not None for r in confirmed)
    assert Counter(int(r.shard) for r in confirmed) == Counter(
        {int(lane.shard): int(lane.taken) for lane in read if int(lane.taken)})
    listed = attendees.attendee_page(event_id=event_id, limit=50).items
    assert len(listed) == len(list(selectors.event_registrations(event_id=event_id)))


@pytest.fixture
def old_table(ddb, settings):
    settings.SEATS_PER_SHARD = 2  # events of several shards: seats counted on one, registrations naming another
    return {"before the shards": before_the_shards(), "before the gate": before_the_gate(),
            "before the queue": before_the_queue(), "before the departure tree": before_the_departure_tree(),
            "before the index": before_the_index(), "before the lanes": before_the_lanes(),
            "before entries carried them": before_entries_carried_them()}


def upgrade(*args: str) -> str:
    out = io.StringIO()
    call_command("upgrade_events", *args, stdout=out)
    return out.getvalue()


def test_every_older_shape_is_upgraded_and_the_history_then_keeps_every_promise(old_table):
    for event_id in old_table.values():
        with pytest.raises(AssertionError):
            assert_current(event_id)
    found = broken_invariants()
    assert "every event is in the current shape" in found
    waiting_before = [(entry.user_id, int(entry.ticket)) for entry in WaitlistEntry.query(
        WaitlistEntry.legacy_pk_for(old_table["before the lanes"]), WaitlistEntry.sk.startswith("WAITLIST#"))]
    assert [user for user, _ in waiting_before] == ["early0", "early1", "early2"]
    report = upgrade()
    assert f"{old_table['before the shards']}: moved into seat shards, 3 registration(s) moved" in report
    assert (f"{old_table['before the lanes']}: 3 waiting-list entr(ies) moved into lanes, 3 entr(ies) carrying "
            "their registration, 2 registration(s) given their shard") in report
    assert f"{old_table['before entries carried them']}: 2 entr(ies) carrying their registration" in report
    assert f"{len(old_table)} event(s) in the current shape" in report
    for event_id in old_table.values():
        assert_current(event_id)
    assert_invariants_clean()
    again = upgrade()  # idempotent: nothing moves twice
    assert "moved" not in again and "indexed" not in again and "given" not in again and "carrying" not in again
    assert_invariants_clean()
    # The waiting list kept its order: those from before the lanes first, with their tickets, then the later one.
    waiting = [(entry.user_id, int(entry.ticket))
               for entry in selectors.waitlist_entries(event_id=old_table["before the lanes"])]
    assert waiting[:3] == waiting_before and [user for user, _ in waiting[3:]] == ["later"]
    # The old students keep their seats, and the randomized history with faults runs on the upgraded events.
    for seed, shape in ((11, "before the shards"), (12, "before the lanes")):
        history, problems = run_history(seed, event_id=old_table[shape])
        assert problems == {}, shape
        assert sum(len(answers) for answers in history.answers.values()) > 0


def test_a_stopped_run_resumes_after_the_last_event_it_finished(old_table, monkeypatch):
    ordered = [event.event_id for event in Event.by_start.query(Event.COLLECTION)]
    stop_at = ordered[2]
    from registrations.management.commands import upgrade_events as command

    original = command.event_upgrade

    def failing(*, event_id, **kwargs):
        if event_id == stop_at:
            raise RuntimeError("the deploy was stopped")
        return original(event_id=event_id, **kwargs)

    monkeypatch.setattr(command, "event_upgrade", failing)
    with pytest.raises(CommandError, match=f"Resume with --after {ordered[1]}"):
        upgrade()
    monkeypatch.setattr(command, "event_upgrade", original)
    resumed = upgrade("--after", ordered[1])
    assert ordered[0] not in resumed and ordered[1] not in resumed and stop_at in resumed
    for event_id in old_table.values():
        assert_current(event_id)
    assert_invariants_clean()
