"""Seat shards: how an event's capacity is split over ``SeatShard`` items, the reads of them, and a re-slicing.

The arithmetic behind the numbers is in docs/registrations.md ("Seat shards"). This module decides counts and
slices, routes a student to a first shard, reads shards back, and adds a re-slicing to a caller's transaction
(``add_reslice``); the transactions that take and free seats are the services'.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings

from registrations.events.models import EventSeats
from registrations.seating.gate import CLOSED, RAISED, add_gate, nobody_in_lane, reopened_gate, reopened_lane
from registrations.seating.hints import hints
from registrations.seating.models import SeatGate, SeatShard
from tems.transactions import LabelledTransaction

# One item takes at most 1,000 WCU/s on AWS (a documented partition limit), a transactional write costs twice a
# plain one, and transactions on one item conflict: a shard takes one registration at a time. A slice small
# enough to sell out quickly lets all shards sell in parallel.
SEATS_PER_SHARD = 50
# A shard admits one transaction per hold: at a 25 ms hold 40 a second, so 2,000/s with each shard busy at most
# half the time needs about 100-160 of them, and 10,000 seats at SEATS_PER_SHARD are 200 (docs/registrations.md,
# "Seat shards"). Every shard is also a lane of the waiting list, which needs as many at that hold. Only the first
# MAX_LANES are written with the event in one transaction; the others in groups of GROUP_SIZE (``seat_only``), so
# the count is bounded by the cost of those writes (one transaction per group), not by DynamoDB's 100 items per
# TransactWriteItems.
MAX_SHARDS = 200
# The inner lanes: the first shards, written with the event in one transaction. A cancel that reopens the gate
# writes them with it, and so does an edit's re-slicing: the inner lanes, the gate, the event, its outbox message,
# its audit entry and the facets it replaces (up to twice ``index.MAX_FACETS``: the dropped ones deleted, the new
# ones put) must fit in DynamoDB's 100 items per TransactWriteItems.
MAX_LANES = 78
# Shards past the lanes written in one transaction (the marks on every shard, a new event's shards): DynamoDB's
# 100 items, less room for the check of the item that says the group's write still applies.
GROUP_SIZE = 90

# How many more seats this process must have put in a student's home shard than in the shard with the fewest
# before the student is sent to one of those instead: 1 keeps the shards level to a seat; a slack of 2 (with two
# choices) was measured to leave the last seats on a few shards (docs/registrations.md, "Tuning constants").
# Where a student's seat is has no other meaning: the claim, not the shard, makes a registration unique.
BALANCE_SLACK = 1
_random = random.Random()


def balance_slack() -> int:
    return int(getattr(settings, "SEAT_BALANCE_SLACK", BALANCE_SLACK))


def seats_per_shard() -> int:
    return int(getattr(settings, "SEATS_PER_SHARD", SEATS_PER_SHARD))


def max_shards() -> int:
    return int(getattr(settings, "MAX_SEAT_SHARDS", MAX_SHARDS))


def max_lanes() -> int:
    return int(getattr(settings, "MAX_SEAT_LANES", MAX_LANES))


def lane_count(shards: int) -> int:
    """How many of an event's ``shards`` are written with the event in one transaction (its *inner* lanes): the
    first ones, at most MAX_LANES."""
    return min(int(shards), max_lanes())


def ticket_lanes(shards: int) -> int:
    """How many of an event's ``shards`` hand out waiting-list tickets: every one. The inner lanes
    (``lane_count``) reopen in the gate's own transaction; the outer ones, past them, in groups before it
    (``marks.reopen_outer_lanes``)."""
    return int(shards)


def lane_of(shard: int, shards: int) -> int:
    """The lane of a student whose first refusal came from ``shard``: the shard itself."""
    return int(shard) % max(ticket_lanes(shards), 1)


def seat_only(shards: int) -> list[list[int]]:
    """The shards past the lanes, in groups of at most GROUP_SIZE: each group is one transaction of a write that
    touches every shard (empty for an event whose every shard is a lane)."""
    rest = list(range(lane_count(shards), int(shards)))
    return [rest[start:start + GROUP_SIZE] for start in range(0, len(rest), GROUP_SIZE)]


def grown_count(count: int, capacity: int) -> int:
    """The shard count after a re-slice to ``capacity``: never fewer than ``count`` (a stale hint still names a
    shard that exists), more only up to the lanes (every new shard is written in the re-slice's transaction)."""
    return max(int(count), min(shard_count(capacity), max_lanes()))


def shard_count(capacity: int) -> int:
    """N = clamp(ceil(capacity / SEATS_PER_SHARD), 1, MAX_SHARDS)."""
    per_shard = seats_per_shard()
    return max(1, min(max_shards(), -(-int(capacity) // per_shard)))


def slices(total: int, count: int, floors: Iterable[int] = ()) -> list[int]:
    """``total`` seats over ``count`` shards as evenly as possible, shard ``i`` never below ``floors[i]``.

    Raises ValueError when the floors (seats already taken) add up to more than ``total``.
    """
    floors = list(floors)
    floors += [0] * (count - len(floors))
    if sum(floors) > total:
        raise ValueError(f"{sum(floors)} seats taken do not fit in {total}")
    base, extra = divmod(total, count)
    wanted = [base + (1 if shard < extra else 0) for shard in range(count)]
    result = [max(want, floor) for want, floor in zip(wanted, floors, strict=True)]
    surplus = sum(result) - total
    # Shards held up by their taken seats got more than their share: take it back from the others' free seats.
    for shard in sorted(range(count), key=lambda k: result[k] - floors[k], reverse=True):
        if surplus <= 0:
            break
        give = min(surplus, result[shard] - floors[shard])
        result[shard] -= give
        surplus -= give
    return result


def home_shard(user_id: str, count: int) -> int:
    """The student's home shard: a stable hash, the shard ``first_shard`` prefers."""
    digest = hashlib.blake2b(user_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def first_shard(event_id: str, user_id: str, count: int) -> int:
    """The shard a student tries first: the home shard, unless this process has put ``balance_slack()`` more
    seats in it than in the shard it put fewest in (of those not known full); then one of those, drawn at random.

    A shard takes one transaction at a time, so its last r seats take at least r transactions however many
    students want them: the seats run out as fast as the number of shards still holding some allows. Hashed
    homes alone fill unevenly, and two choices (the home or one other shard) still left a few shards several seats
    behind the rest when the others ran out, so the last seats took that many transactions' time while everyone
    else waited for the waiting list to open. Seats are counted when their attempt is sent, not when it
    commits, so the requests in flight at once do not all pick the same few shards. With several app servers each
    levels its own share, and the sum stays level. No read is added (the happy path stays one transaction) and
    nothing is decided here: the seat's condition does.
    """
    home = home_shard(user_id, count)
    placed = hints.placed(event_id, count)
    if placed is None or count < 2:
        return home
    # One copy of the counts: other requests of the process move them meanwhile.
    placed = list(placed)
    counts = {k: placed[k] for k in hints.open_shards(event_id, count)}
    if not counts:
        return home
    fewest = min(counts.values())
    if placed[home] - fewest < balance_slack():
        return home
    return _random.choice([k for k, seats in counts.items() if seats == fewest])


def admitting(created_at):
    """The condition of a write that admits someone through a shard (a seat, a ticket of its lane): the event has not
    started by ``created_at``, its registration window (if any) is open then, it is not cancelled (every shard
    carries the mark: events/services.py), not a draft waiting for approval (born marked, unmarked by the
    publication) and no edit holds the shard (``seating.holds``)."""
    return ((SeatShard.starts_at > created_at) & SeatShard.cancelled_at.does_not_exist()
            & SeatShard.draft.does_not_exist() & SeatShard.held.does_not_exist()
            & (SeatShard.opens_at.does_not_exist() | (SeatShard.opens_at <= created_at))
            & (SeatShard.closes_at.does_not_exist() | (SeatShard.closes_at > created_at)))


def new_shards(*, event_id: str, capacity: int, starts_at, taken: Iterable[int] = (), opens_at=None,
               closes_at=None) -> list[SeatShard]:
    """A new event's shards."""
    count = shard_count(capacity)
    taken = list(taken) + [0] * count
    return [SeatShard(*SeatShard.key_for(event_id, shard), event_id=event_id, shard=shard, shards=count,
                      capacity=capacity_k, taken=taken[shard], starts_at=starts_at, opens_at=opens_at,
                      closes_at=closes_at)
            for shard, capacity_k in enumerate(slices(capacity, count))]


def shards_get(*, event_id: str, count: int, consistent: bool = True) -> list[SeatShard]:
    """The event's ``count`` shards, in shard order (one BatchGetItem; missing shards are left out)."""
    found = SeatShard.batch_get([SeatShard.key_for(event_id, shard) for shard in range(count)],
                                consistent_read=consistent)
    return sorted(found, key=lambda item: int(item.shard))


@dataclass(frozen=True)
class SeatCounts:
    """An event's seats as its shards and lanes hold them at one read: never stored, always summed
    (``seat_counts``), so a count shown is a count read."""

    registered: int
    waiting: int
    capacity: int

    @property
    def free(self) -> int:
        return max(self.capacity - self.registered, 0)

    @property
    def full(self) -> bool:
        return self.registered >= self.capacity

    @property
    def joins_waitlist(self) -> bool:
        """Whether a new registration would queue: no seat left, or people already waiting for the next one."""
        return self.full or self.waiting > 0


def seat_counts(*, events: Iterable, consistent: bool = False) -> dict[str, SeatCounts]:
    """``{event_id: SeatCounts}`` of the events (``Event`` or one of its views carrying ``capacity`` and
    ``seat_shards``): their shards' ``taken`` and lanes' ``waiting`` summed, in one BatchGetItem for all of them
    (PynamoDB splits it by 100 keys)."""
    events = list(events)
    keys = [SeatShard.key_for(_event_id(event), shard)
            for event in events for shard in range(int(event.seat_shards or 0))]
    taken: dict[str, int] = {}
    waiting: dict[str, int] = {}
    for shard in SeatShard.batch_get(keys, consistent_read=consistent) if keys else ():
        taken[shard.event_id] = taken.get(shard.event_id, 0) + int(shard.taken)
        waiting[shard.event_id] = waiting.get(shard.event_id, 0) + int(shard.waiting or 0)
    counts = {}
    for event in events:
        event_id = _event_id(event)
        if event.seat_shards:
            # Reading an event teaches this process its shard count: a registration from here then starts at the
            # student's home shard instead of shard 0 (a page view usually comes before the tap).
            hints.remember_shards(event_id, int(event.seat_shards))
        counts[event_id] = SeatCounts(registered=taken.get(event_id, 0), waiting=waiting.get(event_id, 0),
                                      capacity=int(event.capacity or 0))
    return counts


def _event_id(event) -> str:
    event_id = getattr(event, "event_id", None)
    return event_id if event_id else event.pk.removeprefix("EVENT#")


def event_seat_counts(event_id: str) -> SeatCounts:
    """The event's ``SeatCounts``, strongly consistent (its counters' item, then its shards)."""
    seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    return seat_counts(events=[seats], consistent=True)[event_id]


def add_reslice(transaction: LabelledTransaction, *, event_id: str, shards_read: list[SeatShard], sizes: list[int],
                starts_at, gate: SeatGate, reopen: bool = False, raised: bool = False,
                window: tuple | None = None) -> None:
    """Give the event's lanes the slices ``sizes`` (adding shards past those read), in ``transaction``; the
    shards past the lanes keep theirs (``planned_sizes``).

    Each existing shard's new slice is conditioned on ``taken <= slice``, never on what was read: a seat taken
    meanwhile is fine as long as it still fits, so only a slice that no longer holds its seats fails. The
    gate (``gate`` as read) moves its epoch (slices may free seats), under the condition that it did not reopen
    and has as many shards as read. With ``reopen`` (nobody waits: the new slices are for newcomers) the gate
    opens, and every lane with it under the condition that nobody is in it. With ``raised`` (people wait, so the
    gate is closed, and the capacity grew beyond the slices) the gate and every lane say so, and newcomers
    finish handing those seats out before they join. ``window`` (opens, closes), when given, is the event's new
    registration window, written on every shard with the start; None leaves it as it is.
    """
    opened = int(gate.opened)
    if reopen:
        gate_actions, gate_condition = reopened_gate(gate, shards=len(sizes))
    else:
        gate_actions = [SeatGate.shards.set(len(sizes)), SeatGate.epoch.add(1)]
        gate_condition = (SeatGate.opened == opened) & (SeatGate.shards == int(gate.shards))
    if raised:
        gate_actions.append(SeatGate.state.set(RAISED))
        gate_condition &= SeatGate.state >= CLOSED
    add_gate(transaction, event_id=event_id, actions=gate_actions, condition=gate_condition)
    existing = {int(shard.shard) for shard in shards_read}
    # A new shard takes the questions' version the shards showed, and every shard read must still show it: an
    # edit of the questions that lands in between (it writes every shard) makes this transaction fail instead
    # of leaving a new shard that would take answers checked against the old questions.
    questions = max((int(shard.questions or 0) for shard in shards_read), default=0) or None
    lanes = lane_count(len(sizes))
    for shard, size in enumerate(sizes):
        if shard >= lanes:
            # Past the lanes a re-slice changes nothing (``planned_sizes`` keeps their slices, the count never
            # grows past the lanes here); their copies of the start and window are the caller's (``hold``).
            continue
        if shard in existing:
            actions = [SeatShard.capacity.set(size), SeatShard.shards.set(len(sizes)),
                       SeatShard.starts_at.set(starts_at)]
            if window is not None:
                actions += [attribute.remove() if value is None else attribute.set(value)
                            for attribute, value in zip((SeatShard.opens_at, SeatShard.closes_at), window, strict=True)]
            condition = SeatShard.pk.exists() & (SeatShard.taken <= size) & (
                SeatShard.questions.does_not_exist() if questions is None else SeatShard.questions == questions)
            if reopen:
                actions += reopened_lane(gate)
                condition &= nobody_in_lane()
            elif raised:
                actions.append(SeatShard.gate.set(RAISED))
            transaction.update(f"shard_{shard}", SeatShard(*SeatShard.key_for(event_id, shard)), actions=actions,
                               condition=condition, return_old_on_failure=True)
        else:
            transaction.save(f"shard_{shard}", SeatShard(
                *SeatShard.key_for(event_id, shard), event_id=event_id, shard=shard, shards=len(sizes),
                capacity=size, taken=0, starts_at=starts_at, gate=RAISED if raised else None,
                opens_at=window[0] if window else _copied(shards_read, "opens_at"),
                closes_at=window[1] if window else _copied(shards_read, "closes_at"),
                questions=questions, draft=_copied(shards_read, "draft"),
                opened=opened + 1 if reopen else opened), condition=SeatShard.pk.does_not_exist())


def _copied(shards_read: list[SeatShard], name: str):
    """A new shard takes what the shards read show of the window (a re-slice that does not change it) and of a
    draft's mark (a draft's new shard admits nobody before the publication either)."""
    return next((getattr(shard, name) for shard in shards_read), None)


def planned_sizes(*, target: int, count: int, shards_read: list[SeatShard]) -> list[int]:
    """Slices of ``target`` seats over at least ``count`` shards (more if the rule asks, up to the lanes), each
    holding the seats it had taken when read; when they cannot all fit, an even split whose failed conditions will
    say so. The shards past the lanes keep their slices (a re-slice writes the lanes only): the lanes take the
    rest, so a cut is bounded by the lanes' free seats (``seat_only_floor``)."""
    count = grown_count(count, target)
    lanes = lane_count(count)
    taken = [0] * count
    fixed = [0] * (count - lanes)
    for shard in shards_read:
        if int(shard.shard) < lanes:
            taken[int(shard.shard)] = int(shard.taken)
        elif int(shard.shard) < count:
            fixed[int(shard.shard) - lanes] = int(shard.capacity)
    rest = target - sum(fixed)
    try:
        return slices(rest, lanes, floors=taken[:lanes]) + fixed
    except ValueError:
        return slices(max(rest, 0), lanes) + fixed


def seat_only_floor(shards_read: list[SeatShard]) -> int:
    """The lowest capacity a re-slice can give the event now: the slices of the shards past the lanes (which a
    re-slice keeps) and the seats taken in the lanes."""
    if not shards_read:
        return 0
    lanes = lane_count(int(shards_read[0].shards))
    return sum(int(shard.taken) if int(shard.shard) < lanes else int(shard.capacity) for shard in shards_read)
