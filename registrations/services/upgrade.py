"""Older shapes of an event, brought to the current one: ``event_upgrade`` is the one entry point, called by
``manage.py upgrade_events`` at deploy and by a write path whose refusal shows an older shape.

The shapes an event may still have, each from before a change of design (docs/registrations.md):

- before the seat shards: the seats counted on the event's own item (``shard_event`` slices them);
- before the gate item: the gate only on the shards (``gate_of`` makes the item from them);
- before the queue item: the waiting list's sequence on the event's item (``queue_make`` makes it);
- before the departure tree: departures not counted (``rebuild_departures`` counts them from the entries);
- before the attendee index: event-side copies with no index key (``attendees.backfill_index``);
- the legacy registration layout (below);
- before the lanes: waiting-list entries in the event's partition, counted on its ``waitlist_count``
  (``entries_into_lanes`` moves them into lanes, keeping their tickets);
- before entries carried their registration: a bare entry beside a waitlisted event-side copy
  (``entries_carry_registrations`` puts the copy's fields into the entry and deletes the copy);
- before the shards' registrations named their shard: confirmed registrations with no ``shard``
  (``registrations_into_shards`` gives each the shard its seat is counted on).

Request paths know only the current shape. A write that could pass over an older one carries its fence in the
condition of an item it writes anyway, and a refusal whose image shows the old shape calls ``event_upgrade``
and tries again: ``layout = CURRENT_LAYOUT`` on a seat, a lane or the event's item (below), and on the event's
item, for every cancel and promotion, ``current_shape()``: nobody waits from before the lanes (they would be
passed over: the head is read from the lanes) and no registration is being given its shard. A registration or
an entry a request read is the other way an old shape shows: ``upgrade_if_old_shape`` upgrades the event and the
request reads again; an item read in the current shape never goes back to an older one.

In LEGACY_LAYOUT a registration's claim (``EVENT#<e>`` / ``REGCLAIM#<user>``) and its event-side copy
(``EVENT#<e>`` / ``REGISTRATION#<id>``) sat in the event's own partition; in CURRENT_LAYOUT the claim is under
the student and the copy in one of the event's buckets (registrations.models). A claim left under a key nobody
checks would let its student register a second time, so no registration of an event is ever written under the
current keys while any of its claims may still sit under the legacy ones:

- every write that creates or changes an event's registrations (a seat, a waitlist join, a cancel, a
  promotion, a check-in's admission) carries ``layout = CURRENT_LAYOUT`` in the condition of the event item or
  seat shard it writes anyway, so on an event not yet upgraded it is refused and its ALL_OLD image says why:
  the request upgrades the event and tries again;
- the upgrade moves each registration (claim and event-side copy to the current keys, the attendee index key
  into the copy's bucket, the user-side copy marked) in ONE transaction conditioned on the legacy items still
  being what it read, then marks the event and every seat shard current in one transaction conditioned on the
  number of shards read.

So while an event is in the legacy layout nothing but upgrades writes its registrations: concurrent upgrades
meet on the same conditions (one moves a registration, the others' conditions fail and they read again), and
the mark cannot leave a claim behind. A registration that cannot be moved because its student already holds
one under the current key (only a write that skipped the layout condition makes that) is left where it is,
reported, and flagged by ``check_invariants``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from pynamodb.exceptions import PutError, UpdateError

from registrations import attendees
from registrations.errors import RegistrationError
from registrations.models import (
    CONFIRMED,
    CURRENT_LAYOUT,
    REGISTRATION_BUCKETS,
    WAITLISTED,
    Event,
    EventSeats,
    Registration,
    RegistrationClaim,
    SeatGate,
    SeatShard,
    WaitlistDepartures,
    WaitlistEntry,
    WaitlistQueue,
    layout_of,
)
from registrations.seating import positions, shards, tickets
from registrations.seating.gate import (
    CLOSED,
    GATE,
    OPEN,
    RAISED,
    GateBusy,
    gate_close,
    gate_get,
    lane_copy,
    new_gate,
)
from registrations.services.common import (
    CLAIM,
    EVENT_REGISTRATION,
    EVENT_SEATS,
    LANE,
    USER_REGISTRATION,
    WAITLIST_ENTRY,
    WRITE_POLICY,
    busy_error,
    layout_as_read,
)
from tems.transactions import (
    TRANSIENT,
    LabelledTransaction,
    TransactionCancelled,
    is_conditional_check_failed,
    response_code,
)

logger = logging.getLogger(__name__)

LEGACY_CLAIM = "legacy_claim"
LEGACY_EVENT_REGISTRATION = "legacy_event_registration"
LEGACY_WAITLIST_ENTRY = "legacy_waitlist_entry"

# Claims read per BatchGetItem of their two copies (two keys each: PynamoDB sends at most 100 keys a request).
MOVE_BATCH = 50
# A pass that finds claims changed under it (another upgrade moved them; an old process wrote) reads again; an
# event no pass can finish in this many is left for the next run, and the request that needed it is 'busy'.
UPGRADE_MAX_PASSES = 8

# The attributes a moved item keeps: everything but its keys, which the move rebuilds.
_KEY_ATTRIBUTES = frozenset({"pk", "sk", "gsi1pk", "gsi1sk"})


@dataclass
class LayoutUpgrade:
    """What ``layout_upgrade`` did to one event."""

    event_id: str
    moved: int = 0  # registrations this call moved
    marked: bool = False  # this call marked the event current
    # (user id, registration id) of legacy claims whose student already holds a claim under the current key:
    # two registrations of one student, left in place for staff to resolve (check_invariants names them).
    duplicates: list[tuple[str, str]] = field(default_factory=list)


def layout_upgrade(*, event_id: str, sleep: Callable[[float], None] = time.sleep) -> LayoutUpgrade:
    """Move every registration of the event into CURRENT_LAYOUT, then mark the event and its shards current.

    Idempotent, and safe while students register and cancel (they are refused until the mark, and upgrade the
    event themselves): each move is one transaction conditioned on the legacy claim, both copies' statuses as
    read and the current keys being free; the mark is conditioned on the shards read. An event already
    current, or gone, costs one GetItem. Raises RegistrationError('busy') if the event's claims keep changing.
    """
    result = LayoutUpgrade(event_id)
    skipped: set[tuple[str, str]] = set()
    for _ in range(UPGRADE_MAX_PASSES):
        try:
            seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return result
        if layout_of(seats.layout) == CURRENT_LAYOUT:
            return result
        if not seats.seat_shards:
            shard_event(event_id=event_id)  # the mark is written on the shards: an event from before them first
            continue
        if _move_pass(event_id, result, skipped, sleep):
            continue  # claims changed under this pass: read the partition again
        if _mark(event_id, shards=int(seats.seat_shards), sleep=sleep):
            result.marked = True
            for user_id, registration_id in result.duplicates:
                logger.error("event %s: %s holds registration %s under the legacy key and another under the current "
                             "one; left in place", event_id, user_id, registration_id)
            return result
    raise busy_error("This event's registrations are being moved right now; try again in a moment.")


@dataclass
class EventShape:
    """What ``event_upgrade`` did to one event (all zero and False for an event already current, or gone)."""

    event_id: str
    sharded: bool = False  # its seat counter was moved into seat shards
    layout: LayoutUpgrade | None = None
    departure_nodes: int = 0  # departure counters written from its entries
    indexed: int = 0  # registrations given their attendee index key
    into_lanes: int = 0  # waiting-list entries from before the lanes moved into a lane
    carried: int = 0  # entries given their registration's fields (its waitlisted copy deleted)
    shards_given: int = 0  # registrations confirmed before the shards given the shard their seat is counted on

    @property
    def duplicates(self) -> list[tuple[str, str]]:
        return [] if self.layout is None else self.layout.duplicates

    def summary(self) -> str:
        done = [*(["moved into seat shards"] if self.sharded else []),
                *([f"{self.layout.moved} registration(s) moved into the current layout"]
                  if self.layout is not None and self.layout.marked else []),
                *([f"{self.into_lanes} waiting-list entr(ies) moved into lanes"] if self.into_lanes else []),
                *([f"{self.carried} entr(ies) carrying their registration"] if self.carried else []),
                *([f"{self.shards_given} registration(s) given their shard"] if self.shards_given else []),
                *([f"{self.departure_nodes} departure node(s) written"] if self.departure_nodes else []),
                *([f"{self.indexed} registration(s) indexed"] if self.indexed else [])]
        return ", ".join(done) or "already current"


def event_upgrade(*, event_id: str, sleep: Callable[[float], None] = time.sleep) -> EventShape:
    """Bring the event to the current shape, the one every write path expects; the only entry point for that.

    In order: its seat counter moved into seat shards (``shard_event``), its claims and event-side copies moved
    out of its partition (``layout_upgrade``), its gate and queue items made from what its shards and its item
    kept (``gate_of``, ``queue_make``), its waiting-list entries from before the lanes moved into lanes
    (``entries_into_lanes``) and every entry made its registration's copy (``entries_carry_registrations``),
    its registrations confirmed before the shards given theirs (``registrations_into_shards``), its departure
    counters written from its entries (``rebuild_departures``) and its registrations indexed for the attendee
    list (``attendees.backfill_index``).
    Every step is conditioned on what it read, so it is idempotent, safe while students register, and a run
    stopped anywhere is finished by the next. A write path calls it when a refusal shows an older shape;
    ``manage.py upgrade_events`` calls it for every event at deploy. Raises RegistrationError('busy') when the
    event's registrations kept changing under a step (the next call finishes it).
    """
    shape = EventShape(event_id)
    try:
        EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    except EventSeats.DoesNotExist:
        return shape
    shape.sharded = shard_event(event_id=event_id)
    shape.layout = layout_upgrade(event_id=event_id, sleep=sleep)
    try:
        gate_of(event_id=event_id)
        queue_make(event_id)
    except (GateBusy, tickets.QueueBusy):
        pass  # DynamoDB did not take it just then: the next write that needs the item makes it
    shape.into_lanes = entries_into_lanes(event_id=event_id, sleep=sleep)
    shape.carried = entries_carry_registrations(event_id=event_id, sleep=sleep)
    shape.shards_given = registrations_into_shards(event_id=event_id, sleep=sleep)
    shape.departure_nodes = rebuild_departures(event_id=event_id)
    shape.indexed = attendees.backfill_index(event_id=event_id)
    return shape


def upgrade_if_legacy(*, event_id: str, layout: Any) -> bool:
    """A write refused on the event's item or a seat shard whose ALL_OLD image carries ``layout``: if that is the
    legacy layout, bring the event to the current shape and return True (the caller builds its write again);
    else False."""
    if layout_of(layout) == CURRENT_LAYOUT:
        return False
    event_upgrade(event_id=event_id)
    return True


def nobody_before_lanes():
    """Nobody waits from before the lanes: the event's ``waitlist_count`` counts only them (absent or 0)."""
    return EventSeats.waitlist_count.does_not_exist() | (EventSeats.waitlist_count == 0)


def no_older_shape():
    """On the event's item: nobody waits from before the lanes (the head is read from the lanes only) and no
    registration is being given its shard (``registrations_into_shards`` counts the seats nobody names while no
    seat is freed)."""
    return nobody_before_lanes() & EventSeats.giving_shards.does_not_exist()


def current_shape():
    """The fence on the event's item of every cancel: ``no_older_shape()`` and its registrations in the current
    layout. A refusal's ALL_OLD image says which: ``upgrade_if_refused``."""
    return (EventSeats.layout == CURRENT_LAYOUT) & no_older_shape()


def upgrade_if_refused(cancelled: TransactionCancelled, label: str, *, event_id: str, layout: bool = True) -> bool:
    """A write refused on the event's item (``label``) under ``current_shape()`` or ``no_older_shape()``: if its
    ALL_OLD image shows an older shape, bring the event to the current one and return True (the caller builds its
    write again). ``layout`` only counts where it was asked for."""
    if not cancelled.failed(label) or not cancelled.reasons[label].raw_item:
        return False
    image = EventSeats.from_raw_data(cancelled.reasons[label].raw_item)
    if ((layout_of(image.layout) == CURRENT_LAYOUT or not layout) and not int(image.waitlist_count or 0)
            and image.giving_shards is None):
        return False
    event_upgrade(event_id=event_id)
    return True


def is_old_shape(item: Registration | RegistrationClaim | WaitlistEntry) -> bool:
    """Whether a registration or waiting-list entry as read is of an older shape: an entry from before the lanes
    or one that does not carry its registration, a waiting registration with no lane, a confirmed one with no
    shard."""
    if isinstance(item, WaitlistEntry):
        return item.lane is None or not item.carries_registration
    if item.status == CONFIRMED:
        return item.shard is None
    return item.status == WAITLISTED and item.lane is None


def upgrade_if_old_shape(*, event_id: str, items: Iterable[Registration | RegistrationClaim | WaitlistEntry]) -> bool:
    """If any of ``items`` (what a request read) is of an older shape (``is_old_shape``), bring the event to the
    current shape and return True: the caller reads again. An item read in the current shape stays in it."""
    if not any(is_old_shape(item) for item in items):
        return False
    event_upgrade(event_id=event_id)
    return True


def upgrade_if_refused_for_layout(cancelled: TransactionCancelled, label: str, *, event_id: str) -> bool:
    """``upgrade_if_legacy`` for the item ``label`` of a cancelled transaction, read from its ALL_OLD image; False
    when that item's condition held or the item does not exist (the caller's other reasons say why)."""
    if not cancelled.failed(label) or not cancelled.reasons[label].raw_item:
        return False
    layout = cancelled.reasons[label].raw_item.get("layout")
    return upgrade_if_legacy(event_id=event_id, layout=None if layout is None else layout.get("N"))


def _batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _move_pass(event_id: str, result: LayoutUpgrade, skipped: set[tuple[str, str]],
               sleep: Callable[[float], None]) -> int:
    """Move each legacy claim of the event with its copies, a page at a time; returns how many were stale."""
    stale = 0
    claims = RegistrationClaim.query(Event.pk_for(event_id),
                                     RegistrationClaim.sk.startswith(RegistrationClaim.SK_PREFIX), consistent_read=True)
    for batch in _batched(claims, MOVE_BATCH):
        batch = [claim for claim in batch if (claim.user_id, claim.registration_id) not in skipped]
        keys = [key for claim in batch for key in (
            Registration.legacy_event_key_for(event_id, claim.registration_id),
            Registration.user_key_for(claim.user_id, claim.registration_id))]
        copies = {(copy.pk, copy.sk): copy for copy in Registration.batch_get(keys, consistent_read=True)}
        for claim in batch:
            outcome = _move(claim,
                            copies.get(Registration.legacy_event_key_for(event_id, claim.registration_id)),
                            copies.get(Registration.user_key_for(claim.user_id, claim.registration_id)), sleep=sleep)
            if outcome == "moved":
                result.moved += 1
            elif outcome == "duplicate":
                skipped.add((claim.user_id, claim.registration_id))
                result.duplicates.append((claim.user_id, claim.registration_id))
            else:
                stale += 1
    return stale


def _kept(item: RegistrationClaim | Registration) -> dict[str, Any]:
    return {name: value for name, value in item.attribute_values.items() if name not in _KEY_ATTRIBUTES}


def _move(claim: RegistrationClaim, event_copy: Registration | None, user_copy: Registration | None, *,
          sleep: Callable[[float], None]) -> str:
    """One registration into the current layout, as one transaction: "moved", "stale" (it changed since the read:
    the next pass reads it again) or "duplicate" (its student holds a claim under the current key already)."""
    event_id, user_id, registration_id = claim.event_id, claim.user_id, claim.registration_id
    transaction = LabelledTransaction()
    transaction.delete(LEGACY_CLAIM, RegistrationClaim(*RegistrationClaim.legacy_key_for(event_id, user_id)),
                       condition=((RegistrationClaim.registration_id == registration_id)
                                  & (RegistrationClaim.status == claim.status)))
    transaction.save(CLAIM, RegistrationClaim(*RegistrationClaim.key_for(event_id, user_id), **_kept(claim)),
                     condition=RegistrationClaim.pk.does_not_exist(), return_old_on_failure=True)
    if event_copy is not None:
        transaction.delete(LEGACY_EVENT_REGISTRATION,
                           Registration(*Registration.legacy_event_key_for(event_id, registration_id)),
                           condition=Registration.status == event_copy.status)
        name = event_copy.user_name or event_copy.user_id
        transaction.save(EVENT_REGISTRATION, Registration(
            *Registration.event_key_for(event_id, registration_id), **_kept(event_copy),
            **attendees.index_fields(event_id=event_id, name=name, registration_id=registration_id),
        ), condition=Registration.pk.does_not_exist())
    if user_copy is not None:
        transaction.update(USER_REGISTRATION, Registration(*Registration.user_key_for(user_id, registration_id)),
                           actions=[Registration.layout.set(CURRENT_LAYOUT)],
                           condition=Registration.status == user_copy.status)
    try:
        WRITE_POLICY.sleeping(sleep).run(transaction.commit, busy=lambda _: busy_error(
            "This event's registrations are being moved right now; try again in a moment."))
    except TransactionCancelled as cancelled:
        if cancelled.failed(CLAIM) and not cancelled.failed(LEGACY_CLAIM):
            current = cancelled.reasons[CLAIM].raw_item
            if current and RegistrationClaim.from_raw_data(current).registration_id != registration_id:
                return "duplicate"
        return "stale"
    return "moved"


def _mark(event_id: str, *, shards: int, sleep: Callable[[float], None]) -> bool:
    """The event and its ``shards`` seat shards current, in one transaction; False if the shards changed."""
    transaction = LabelledTransaction()
    transaction.update(EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
                       actions=[EventSeats.layout.set(CURRENT_LAYOUT)],
                       condition=EventSeats.seat_shards == shards)
    for shard in range(shards):
        transaction.update(f"shard_{shard}", SeatShard(*SeatShard.key_for(event_id, shard)),
                           actions=[SeatShard.layout.set(CURRENT_LAYOUT)], condition=SeatShard.pk.exists())
    try:
        WRITE_POLICY.sleeping(sleep).run(transaction.commit, busy=lambda _: busy_error(
            "This event's registrations are being moved right now; try again in a moment."))
    except TransactionCancelled:
        return False  # a shard was added (an edit) or the event is gone: the caller reads again
    return True


# --- events from before the seat shards and the gate item ---------------------------------------------------


def shard_event(*, event_id: str) -> bool:
    """Move an old event's ``registered_count`` into seat shards, in one transaction; True if this call did it.

    The counters are read, then written under the condition that they are still what was read and that the
    event has no shards yet, so a registration or cancel in between (or another migration) fails it and it
    reads again; an event that already has shards is left alone. Taken seats fill the slices in shard order.
    With people waiting behind free seats (a promotion that never finished) only the taken seats are sliced and
    the rest is left for the promotion to hand to the waiting list first (the gate RAISED until it has).
    """
    for _ in range(16):
        try:
            event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return False
        if event.seat_shards:
            return False
        capacity, taken = int(event.capacity), int(event.registered_count or 0)
        waiting = int(event.waitlist_count or 0)
        sliced = taken if waiting and taken < capacity else max(capacity, taken)
        # Seats left for the promotion: the gate says RAISED, so no newcomer closes it and joins (or takes one)
        # before the people already waiting have them.
        gate = RAISED if sliced < capacity else None
        count = shards.shard_count(sliced)
        slice_sizes = shards.slices(sliced, count)
        transaction = LabelledTransaction()
        left = taken
        for shard, size in enumerate(slice_sizes):
            held = min(left, size)
            left -= held
            transaction.save(f"shard_{shard}", SeatShard(
                *SeatShard.key_for(event_id, shard), event_id=event_id, shard=shard, shards=count, capacity=size,
                taken=held, starts_at=event.starts_at, layout=event.layout, gate=gate),
                condition=SeatShard.pk.does_not_exist())
        transaction.save(GATE, new_gate(event_id=event_id, shards=count, state=gate or OPEN),
                         condition=SeatGate.pk.does_not_exist())
        transaction.update(
            EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
            actions=[EventSeats.seat_shards.set(count), EventSeats.sliced.set(sliced),
                     EventSeats.registered_count.remove()],
            condition=(EventSeats.seat_shards.does_not_exist() & (EventSeats.capacity == capacity)
                       & counter_is(EventSeats.registered_count, taken)
                       & counter_is(EventSeats.waitlist_count, waiting)
                       & layout_as_read(EventSeats.layout, event.layout)),
        )
        try:
            WRITE_POLICY.run(transaction.commit, busy=lambda _: busy_error("This event is busy; try again."))
        except TransactionCancelled:
            continue  # the counters moved, or someone else gave it shards: look again
        return True
    raise busy_error("This event's seats are changing too fast to move them into shards now; try again.")


def gate_of(*, event_id: str) -> SeatGate:
    """The event's gate (``SeatGate``), strongly consistent; made first for an event from before the gate item.

    Such an event's shards all carry the same gate (it was closed and opened on every shard in one
    transaction), and nothing changes it while the event has no gate item, since every write that closes, copies
    or opens a gate, or frees a seat, writes the gate item too: so the gate made from them is put under
    ``attribute_not_exists`` and never contradicts them. Raises RegistrationError('not_found') for no such event,
    GateBusy when DynamoDB does not answer in time.
    """
    for _ in range(4):
        gate = gate_get(event_id=event_id)
        if gate is not None:
            return gate
        try:
            event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
        if not event.seat_shards:
            shard_event(event_id=event_id)  # makes the gate with the shards
            continue
        count = int(event.seat_shards)
        state = max((int(lane.gate or 0) for lane in shards.shards_get(event_id=event_id, count=count)), default=OPEN)
        try:
            new_gate(event_id=event_id, shards=count, state=state).save(condition=SeatGate.pk.does_not_exist())
        except PutError as error:
            if response_code(error) in TRANSIENT:
                raise GateBusy() from error
            if not is_conditional_check_failed(error):
                raise
    raise busy_error("This event's seats are changing right now; try again.")


def counter_is(counter, value: int):
    # A counter never written reads as 0 (the model's default), so 0 also matches an absent attribute.
    return (counter == value) | counter.does_not_exist() if value == 0 else counter == value


# --- waiting-list entries from before the lanes, and from before they carried their registration --------------


def entries_into_lanes(*, event_id: str, sleep: Callable[[float], None] = time.sleep) -> int:
    """Move every waiting-list entry from before the lanes into a lane whose gate is closed, keeping its ticket;
    returns how many this call moved.

    The ticket is the entry's place: the head is the smallest ticket over the lanes and a position counts the
    tickets and departures below it, so an entry keeps its place in any lane, and these tickets, from the
    sequence before the lanes, are below every lane's: the moved entries stay ahead of everyone, in their order,
    at their positions. Each move is ONE transaction: the old entry deleted under "still this registration's",
    the new one put under ``attribute_not_exists``, the claim and the student's copy told the lane under "still
    waiting with this ticket", the lane's ``waiting`` up under "gate closed" (so nobody waits in an open lane) and
    the event's ``waitlist_count`` down. Until it reaches 0, every cancel and promotion is refused by
    ``current_shape()`` (it would read the head from the lanes alone and pass these over) and upgrades the event
    itself. Concurrent upgrades meet on the old entry's condition.
    """
    moved = 0
    for _ in range(UPGRADE_MAX_PASSES):
        try:
            seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return moved
        if not int(seats.waitlist_count or 0) or not seats.seat_shards:
            return moved
        entries = list(WaitlistEntry.query(WaitlistEntry.legacy_pk_for(event_id),
                                           WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX), consistent_read=True))
        lanes = _closed_lanes(event_id, int(seats.seat_shards))
        if not entries or not lanes:
            logger.error("event %s: waitlist_count=%s from before the lanes, %d such entries, %d closed lanes: left "
                         "as it is", event_id, seats.waitlist_count, len(entries), len(lanes))
            return moved
        stale = 0
        for entry in entries:
            if _entry_into_lane(event_id, entry, lanes[int(entry.ticket) % len(lanes)], sleep=sleep):
                moved += 1
            else:
                stale += 1
        if not stale:
            return moved
    raise busy_error("This event's waiting list is being moved right now; try again in a moment.")


def _closed_lanes(event_id: str, count: int) -> list[int]:
    """The event's lanes whose gate is closed. None closed while people wait: the event's gate is copied into
    lane 0, closed first if every shard is full (a gate open beside waiting people is left for staff)."""
    for _ in range(2):
        read = shards.shards_get(event_id=event_id, count=count)
        closed = [int(lane.shard) for lane in read if lane.gate_closed]
        if closed:
            return closed
        try:
            gate = gate_of(event_id=event_id)
            if not gate.closed:
                full = all(int(shard.taken) >= int(shard.capacity) for shard in shards.shards_get(
                    event_id=event_id, count=int(gate.shards)))
                if not (full and gate_close(gate=gate)):
                    return []
            lane_copy(gate=gate, lane=0)
        except GateBusy:
            return []
    return []


def _entry_into_lane(event_id: str, entry: WaitlistEntry, lane: int, *, sleep: Callable[[float], None]) -> bool:
    ticket, registration_id = int(entry.ticket), entry.registration_id
    kept = {name: value for name, value in entry.attribute_values.items() if name not in ("pk", "sk", "lane")}
    still_waiting = (RegistrationClaim.registration_id == registration_id) & (
        RegistrationClaim.status == WAITLISTED) & (RegistrationClaim.ticket == ticket)
    transaction = LabelledTransaction()
    transaction.delete(LEGACY_WAITLIST_ENTRY, WaitlistEntry(*WaitlistEntry.legacy_key_for(event_id, ticket)),
                       condition=WaitlistEntry.registration_id == registration_id)
    transaction.save(WAITLIST_ENTRY, WaitlistEntry(*WaitlistEntry.key_for(event_id, ticket, lane), lane=lane, **kept),
                     condition=WaitlistEntry.pk.does_not_exist())
    transaction.update(CLAIM, RegistrationClaim(*RegistrationClaim.key_for(event_id, entry.user_id)),
                       actions=[RegistrationClaim.lane.set(lane)], condition=still_waiting)
    transaction.update(USER_REGISTRATION, Registration(*Registration.user_key_for(entry.user_id, registration_id)),
                       actions=[Registration.lane.set(lane)],
                       condition=(Registration.status == WAITLISTED) & (Registration.ticket == ticket))
    transaction.update(LANE, SeatShard(*SeatShard.key_for(event_id, lane)), actions=[SeatShard.waiting.add(1)],
                       condition=SeatShard.pk.exists() & (SeatShard.gate >= CLOSED)
                       & (SeatShard.layout == CURRENT_LAYOUT))
    transaction.update(EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
                       actions=[EventSeats.waitlist_count.add(-1)], condition=EventSeats.waitlist_count >= 1)
    return _committed(transaction, sleep)


def _committed(transaction: LabelledTransaction, sleep: Callable[[float], None]) -> bool:
    """Send one step's transaction: False if a condition failed (something changed since the read)."""
    try:
        WRITE_POLICY.sleeping(sleep).run(transaction.commit, busy=lambda _: busy_error(
            "This event's registrations are being moved right now; try again in a moment."))
    except TransactionCancelled:
        return False
    return True


def entries_carry_registrations(*, event_id: str, sleep: Callable[[float], None] = time.sleep) -> int:
    """Make every lane entry its waitlisted registration's event-side copy; returns how many this call changed.

    An entry from before that carries no registration fields, and its registration has a waitlisted copy of its
    own. Each is ONE transaction: the copy's fields and attendee index key set on the entry under "still this
    registration's and still bare", the copy deleted under "still waiting", the student's copy checked still
    waiting. A cancel refuses a bare entry (its delete needs ``status``) and a promotion reads its heads through
    ``upgrade_if_old_shape``, so nothing but upgrades touches one; concurrent upgrades meet on "still bare".
    """
    carried = 0
    for _ in range(UPGRADE_MAX_PASSES):
        try:
            seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return carried
        bare = [entry for lane in range(int(seats.seat_shards or 0)) for entry in WaitlistEntry.query(
            WaitlistEntry.lane_pk_for(event_id, lane), WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX),
            filter_condition=WaitlistEntry.status.does_not_exist(), consistent_read=True)]
        stale = 0
        for batch in _batched(bare, MOVE_BATCH):
            keys = [key for entry in batch for key in (
                Registration.event_key_for(event_id, entry.registration_id),
                Registration.user_key_for(entry.user_id, entry.registration_id))]
            copies = {(copy.pk, copy.sk): copy for copy in Registration.batch_get(keys, consistent_read=True)}
            for entry in batch:
                event_copy = copies.get(Registration.event_key_for(event_id, entry.registration_id))
                user_copy = copies.get(Registration.user_key_for(entry.user_id, entry.registration_id))
                if user_copy is None or user_copy.status != WAITLISTED:
                    stale += 1  # cancelled or promoted since the entries were read
                elif _carry(event_id, entry, event_copy, user_copy, sleep=sleep):
                    carried += 1
                else:
                    stale += 1
        if not stale:
            return carried
    raise busy_error("This event's waiting list is being moved right now; try again in a moment.")


def _carry(event_id: str, entry: WaitlistEntry, event_copy: Registration | None, user_copy: Registration, *,
           sleep: Callable[[float], None]) -> bool:
    registration_id = entry.registration_id
    source = event_copy if event_copy is not None else user_copy
    index = attendees.index_fields(event_id=event_id, name=source.user_name or source.user_id,
                                   registration_id=registration_id)
    transaction = LabelledTransaction()
    transaction.update(WAITLIST_ENTRY, WaitlistEntry(entry.pk, entry.sk), actions=[
        *([WaitlistEntry.user_name.set(source.user_name)] if source.user_name is not None else []),
        WaitlistEntry.status.set(WAITLISTED), WaitlistEntry.created_at.set(source.created_at),
        WaitlistEntry.gsi1pk.set(index["gsi1pk"]), WaitlistEntry.gsi1sk.set(index["gsi1sk"]),
    ], condition=(WaitlistEntry.registration_id == registration_id) & WaitlistEntry.status.does_not_exist())
    if event_copy is not None:
        transaction.delete(EVENT_REGISTRATION, Registration(*Registration.event_key_for(event_id, registration_id)),
                           condition=Registration.status == WAITLISTED)
    transaction.condition_check(USER_REGISTRATION, Registration, *Registration.user_key_for(
        entry.user_id, registration_id), condition=Registration.status == WAITLISTED)
    return _committed(transaction, sleep)


# --- registrations confirmed before the shards ------------------------------------------------------------------


def registrations_into_shards(*, event_id: str, sleep: Callable[[float], None] = time.sleep) -> int:
    """Give every confirmed registration that names no shard (confirmed before the shards) the shard its seat is
    counted on; returns how many this call gave one.

    ``shard_event`` counted those seats in the shards without saying whose they were, and a cancel must free the
    shard that counts its seat: a shard's ``taken`` is at least the registrations naming it. So each is given a
    shard whose ``taken`` exceeds the registrations already naming it. Those counts hold still only while no
    seat is freed: first the event's item is marked ``giving_shards`` (one write, under "not marked"), which
    refuses every cancel and promotion (``current_shape()``); seats taken meanwhile add a seat and a registration
    naming it together, and the shards are read before the registrations, so they can only make a shard look
    fuller. Then each registration is ONE transaction: its claim and both copies given the shard under "still
    confirmed with no shard", the mark moved by one under "as read" (concurrent upgrades take turns on it). A
    pass that finds none left removes the mark under "as read".
    """
    given = 0
    for _ in range(UPGRADE_MAX_PASSES):
        try:
            seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return given
        if not seats.seat_shards:
            return given
        count, mark = int(seats.seat_shards), seats.giving_shards
        read = shards.shards_get(event_id=event_id, count=count)  # before the registrations: see above
        naming = [0] * count
        nameless: list[Registration] = []
        for bucket in range(REGISTRATION_BUCKETS):
            for copy in Registration.query(Registration.event_pk_for(event_id, bucket),
                                           Registration.sk.startswith(Registration.SK_PREFIX), consistent_read=True):
                if copy.status != CONFIRMED:
                    continue
                if copy.shard is None:
                    nameless.append(copy)
                elif int(copy.shard) < count:
                    naming[int(copy.shard)] += 1
        if mark is None:
            if not nameless:
                return given
            _mark_giving(event_id)
            continue  # count again now that no seat can be freed
        free = {int(shard.shard): int(shard.taken) - naming[int(shard.shard)] for shard in read}
        turn, stale = int(mark), False
        for copy in sorted(nameless, key=lambda copy: copy.registration_id):
            shard = next((k for k in sorted(free) if free[k] > 0), None)
            if shard is None:
                logger.error("event %s: registration %s is confirmed but no shard counts a seat for it",
                             event_id, copy.registration_id)
                break
            if not _give_shard(event_id, copy, shard, turn=turn, sleep=sleep):
                stale = True
                break
            free[shard], turn, given = free[shard] - 1, turn + 1, given + 1
        if not stale and _unmark_giving(event_id, turn=turn, sleep=sleep):
            return given
    raise busy_error("This event's registrations are being moved right now; try again in a moment.")


def _mark_giving(event_id: str) -> None:
    try:
        EventSeats(*EventSeats.key_for(event_id)).update(actions=[EventSeats.giving_shards.set(0)],
                                                         condition=EventSeats.giving_shards.does_not_exist())
    except UpdateError as error:
        if response_code(error) in TRANSIENT:
            raise busy_error("This event's registrations are being moved right now; try again.") from error
        if not is_conditional_check_failed(error):
            raise


def _give_shard(event_id: str, copy: Registration, shard: int, *, turn: int,
                sleep: Callable[[float], None]) -> bool:
    user_id, registration_id = copy.user_id, copy.registration_id
    nameless = (Registration.status == CONFIRMED) & Registration.shard.does_not_exist()
    transaction = LabelledTransaction()
    transaction.update(CLAIM, RegistrationClaim(*RegistrationClaim.key_for(event_id, user_id)),
                       actions=[RegistrationClaim.shard.set(shard)],
                       condition=(RegistrationClaim.registration_id == registration_id)
                       & (RegistrationClaim.status == CONFIRMED) & RegistrationClaim.shard.does_not_exist())
    for label, key in ((USER_REGISTRATION, Registration.user_key_for(user_id, registration_id)),
                       (EVENT_REGISTRATION, Registration.event_key_for(event_id, registration_id))):
        transaction.update(label, Registration(*key), actions=[Registration.shard.set(shard)], condition=nameless)
    transaction.update(EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
                       actions=[EventSeats.giving_shards.set(turn + 1)], condition=EventSeats.giving_shards == turn)
    return _committed(transaction, sleep)


def _unmark_giving(event_id: str, *, turn: int, sleep: Callable[[float], None]) -> bool:
    transaction = LabelledTransaction()
    transaction.update(EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
                       actions=[EventSeats.giving_shards.remove()], condition=EventSeats.giving_shards == turn)
    return _committed(transaction, sleep)


# --- events from before the queue item ------------------------------------------------------------------


def queue_make(event_id: str) -> None:
    """Make the event's queue item for an event from before it, from the sequence and departures its event's
    item kept (nothing writes those any more); an item already made is left alone. Raises QueueBusy."""
    try:
        seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    except EventSeats.DoesNotExist:
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
    queue = WaitlistQueue(*WaitlistQueue.key_for(event_id))
    try:
        # Departures since the change may have made the item already (``left`` only): they are added to.
        queue.update(actions=[
            WaitlistQueue.event_id.set(event_id), WaitlistQueue.entity.set("WaitlistQueue"),
            WaitlistQueue.seq.set(int(seats.waitlist_seq or 0)),
            WaitlistQueue.left.set((WaitlistQueue.left | 0) + int(seats.waitlist_left or 0)),
            WaitlistQueue.claim_last.set({}), WaitlistQueue.claim_size.set({}), WaitlistQueue.claim_from.set({}),
            WaitlistQueue.claim_at.set({}),
        ], condition=WaitlistQueue.claim_last.does_not_exist())
    except UpdateError as error:
        if response_code(error) in TRANSIENT:
            raise tickets.QueueBusy() from error
        if not is_conditional_check_failed(error):
            raise


# --- events from before the departure tree -------------------------------------------------------------------

# Nodes per transaction next to the condition checks on the event and its lanes (DynamoDB allows 100 items).
REBUILD_ITEMS = 100
REBUILD_ROUNDS = 20


def rebuild_departures(*, event_id: str) -> int:
    """Set the event's departure nodes to what its entries say (tickets neither waiting nor unused in a lane's
    current block are the departures).

    For events whose waiting list predates the tree. Each chunk of nodes is written with absolute values in one
    transaction that also checks the event's ``waitlist_seq`` and ``waitlist_count``, the queue's ``seq``, and every
    lane's block and
    ``waiting`` are still what was read with the entries, so a join or a departure in between makes it read
    again instead of writing a stale count (a departure that lands between two chunks ADDs to a node already
    exact, and the next chunk rereads). Returns the number of nodes written. Raises RegistrationError('busy')
    if the list never held still.
    """
    for _ in range(REBUILD_ROUNDS):
        try:
            seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return 0
        seq, count = int(seats.waitlist_seq or 0), int(seats.waitlist_count or 0)
        lanes = [] if not seats.seat_shards else sorted(
            SeatShard.batch_get([SeatShard.key_for(event_id, k) for k in range(int(seats.seat_shards))],
                                consistent_read=True), key=lambda lane: int(lane.shard))
        try:
            queue = WaitlistQueue.get(*WaitlistQueue.key_for(event_id), consistent_read=True)
        except WaitlistQueue.DoesNotExist:
            queue = None
        queue_seq = None if queue is None else queue.seq
        partitions = [WaitlistEntry.legacy_pk_for(event_id),
                      *(WaitlistEntry.lane_pk_for(event_id, int(lane.shard)) for lane in lanes)]
        live = {int(entry.ticket) for pk in partitions for entry in WaitlistEntry.query(
            pk, WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX), consistent_read=True)}
        unused = {ticket for lane in lanes for ticket in range(*lane.unissued)}
        if queue is not None and queue.claim_last is not None:
            ends = {int(lane.shard): lane.lane_end for lane in lanes}
            unused |= {ticket for shard in queue.lanes_claimed()
                       for ticket in range(*(queue.pending(shard, ends.get(shard)) or (0, 0)))}
        last = max(seq, int(queue_seq or 0))
        nodes: dict[tuple[int, int], dict[int, int]] = {}
        gone = (t for t in range(1, last + 1) if t not in live and t not in unused)
        for (level, block, digit), amount in positions.departure_nodes(gone).items():
            nodes.setdefault((level, block), {})[digit] = amount
        per_chunk = REBUILD_ITEMS - 2 - len(lanes)
        chunks = [sorted(nodes.items())[start:start + per_chunk] for start in range(0, len(nodes), per_chunk)]
        try:
            for chunk in chunks:
                transaction = LabelledTransaction()
                unchanged = (EventSeats.waitlist_count == count) & (
                    EventSeats.waitlist_seq == seq if seats.waitlist_seq is not None
                    else EventSeats.waitlist_seq.does_not_exist())
                transaction.condition_check("event", EventSeats, *EventSeats.key_for(event_id), condition=unchanged)
                # Since the queue item, blocks are claimed there: no claim in between either.
                transaction.condition_check("queue", WaitlistQueue, *WaitlistQueue.key_for(event_id),
                                            condition=_as_read(WaitlistQueue.seq, queue_seq))
                for lane in lanes:
                    transaction.condition_check(f"lane_{lane.shard}", SeatShard, *SeatShard.key_for(
                        event_id, int(lane.shard)), condition=_as_read(SeatShard.lane_next, lane.lane_next)
                        & _as_read(SeatShard.waiting, lane.waiting))
                for (level, block), digits in chunk:
                    node = WaitlistDepartures(*WaitlistDepartures.key_for(event_id, level, block))
                    transaction.update(f"{positions.LABEL_PREFIX}_{level}_{block:010d}", node, actions=[
                        *(getattr(WaitlistDepartures, WaitlistDepartures.digit_name(digit)).set(amount)
                          for digit, amount in sorted(digits.items())),
                        WaitlistDepartures.entity.set("WaitlistDepartures"),
                    ])
                transaction.commit()
        except TransactionCancelled:
            continue  # the list moved: read it again
        return len(nodes)
    raise RegistrationError("busy", f"The waiting list of event {event_id} kept changing; run the backfill again.")


def _as_read(attribute, value):
    return attribute.does_not_exist() if value is None else attribute == value
