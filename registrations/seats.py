"""Seat shards: how an event's capacity is split over ``SeatShard`` items, and the reads of them.

The arithmetic behind the numbers is in docs/registrations.md ("Seat shards"). Writes to shards live in the
services; this module only decides counts and slices, routes a student to a first shard and reads shards back.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable

from django.conf import settings

from registrations.models import CURRENT_LAYOUT, EventSeats, SeatShard

# One shard item takes at most 1,000 WCU/s on AWS; a registration's transactional write of a small shard costs
# 2 WCU, and transactions on one item conflict, so one item sustains roughly 40-100 registrations/s. 50 seats a
# shard lets a full house sell out in about a second per shard, all shards in parallel.
SEATS_PER_SHARD = 50
# A cancel that reopens the waiting list's gate writes every shard in its transaction (100 items at most): 80
# shards, the gate, the event and its 5 registration items make 87; an edit re-slices every shard in one
# (80 + the gate, the event and its outbox message). A shard item takes a registration every
# hold (~10 ms): 80 shards carry ~8,000/s, so a 2,400/s opening keeps each one under a third busy and a
# student's conflicts rare (at 40 shards, 60 % busy, one in twenty met a dozen in a row: bench-hot).
MAX_SHARDS = 80

# event id -> number of shards, learned from refused seats' images; only a routing hint (see first_shard).
_known_shards: dict[str, int] = {}
_KNOWN_SHARDS_LIMIT = 10_000
# events whose waiting list's gate this process last saw closed; only a routing hint (see known_full).
_known_full: set[str] = set()
# event id -> (its shard count then, the shards this process last saw with every seat taken); a routing hint
# (see known_full_shard).
_full_shards: dict[str, tuple[int, set[int]]] = {}
# event id -> (its shard count then, the seats this process took in each shard); a routing hint (see first_shard).
_placed: dict[str, tuple[int, list[int]]] = {}
# How many more seats this process must have put in a student's home shard than in the other one drawn before the
# student is sent there instead: 1 is "the power of two choices". Measured at K = 1 (docs/registrations.md, "The
# last seats"): with 2 the last ~20 seats still sat on a few shards (1,984/s in the seats' last quarter), with 1
# the gate closed 32 ms sooner (2,260/s). Where a student's seat is has no other meaning: the claim, not the
# shard, makes a registration unique.
BALANCE_SLACK = 1
_random = random.Random()


def balance_slack() -> int:
    return int(getattr(settings, "SEAT_BALANCE_SLACK", BALANCE_SLACK))


def seats_per_shard() -> int:
    return int(getattr(settings, "SEATS_PER_SHARD", SEATS_PER_SHARD))


def max_shards() -> int:
    return int(getattr(settings, "MAX_SEAT_SHARDS", MAX_SHARDS))


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
    seats in it than in one other shard drawn at random (and not known full); then that one.

    A shard takes one transaction at a time (a hold, ~10 ms), so its last r seats take at least r holds however
    many students want them: the seats run out as fast as the number of shards still holding some allows. Hashed
    homes alone fill unevenly (at K = 1 the homes of 12,000 students over 80 shards held 129 to 181 of them),
    and at the end of a burst a few shards kept their last seats for 0.13 s while everyone else waited for the
    waiting list to open. Two choices on the seats each shard took keep the shards level as they fill, so they
    run out together; with several app servers each levels its own share, and the sum stays level. No read is
    added (the happy path stays one transaction) and nothing is decided here: the seat's condition does.
    """
    home = home_shard(user_id, count)
    placed = _placed.get(event_id)
    if placed is None or placed[0] != count or count < 2:
        return home
    other = _random.randrange(count - 1)
    other += other >= home
    if known_full_shard(event_id, other, count) or placed[1][home] - placed[1][other] < balance_slack():
        return home
    return other


def took_seat(event_id: str, shard: int, count: int) -> None:
    """Count a seat this process took in ``shard`` (of ``count``), for ``first_shard``. Unlocked: a count lost to
    a race between threads only makes the hint a seat less exact."""
    placed = _placed.get(event_id)
    if placed is None or placed[0] != count:
        if len(_placed) >= _KNOWN_SHARDS_LIMIT:
            _placed.clear()
        placed = _placed[event_id] = (count, [0] * count)
    if shard < count:
        placed[1][shard] += 1


def known_shards(event_id: str) -> int:
    """How many shards this process last saw the event have; 1 (shard 0, which every event has) if unknown.

    Only a routing hint: the seat's condition decides, and a refused seat's image carries the real count. Shard
    counts never shrink, so a stale hint only names a shard that exists.
    """
    return _known_shards.get(event_id, 1)


def remember_shards(event_id: str, count: int) -> None:
    if len(_known_shards) >= _KNOWN_SHARDS_LIMIT:
        _known_shards.clear()
    _known_shards[event_id] = int(count)


def known_full(event_id: str) -> bool:
    """Whether this process last saw the event's waiting-list gate closed (every seat taken).

    Only a hint of where to look first: a newcomer then reads its lane (one GetItem, which holds nothing and
    costs one read unit) instead of trying a seat, a transaction of six items that a full shard refuses after
    holding it and paying every item's write units. The join's own condition (the lane's gate closed) decides,
    and a lane that shows the gate open sends the newcomer back to the seats.
    """
    return event_id in _known_full


def remember_full(event_id: str, full: bool) -> None:
    if not full:
        _known_full.discard(event_id)
        return
    if len(_known_full) >= _KNOWN_SHARDS_LIMIT:
        _known_full.clear()
    _known_full.add(event_id)


def known_full_shard(event_id: str, shard: int, count: int) -> bool:
    """Whether this process's last image of ``shard`` (of ``count``) showed every seat taken.

    Only a hint of where to look first, like ``known_full`` for one shard: a newcomer whose home shard is known
    full reads it (one GetItem, one read unit) instead of sending a seat attempt that the shard would refuse after
    holding it and paying six items' write units (12 WCU). As the seats run out most homes are full: a K = 1
    bench-hot run had 2,177 seat attempts refused (~26,000 WCU) while the table sat at its 40,000 WCU/s. The
    read's image decides where to go: a seat freed since shows as room, and a re-slicing (another count) forgets
    the hint.
    """
    known = _full_shards.get(event_id)
    return known is not None and known[0] == count and shard in known[1]


def remember_shard(event_id: str, shard: int, count: int, *, full: bool) -> None:
    known = _full_shards.get(event_id)
    if known is None or known[0] != count:
        if not full:
            return
        if len(_full_shards) >= _KNOWN_SHARDS_LIMIT:
            _full_shards.clear()
        known = _full_shards[event_id] = (count, set())
    if full:
        known[1].add(shard)
    else:
        known[1].discard(shard)


def new_shards(*, event_id: str, capacity: int, starts_at, layout: int = CURRENT_LAYOUT,
               taken: Iterable[int] = ()) -> list[SeatShard]:
    """A new event's shards, born in its registration layout (a seat is taken only under the current one)."""
    count = shard_count(capacity)
    taken = list(taken) + [0] * count
    return [SeatShard(*SeatShard.key_for(event_id, shard), event_id=event_id, shard=shard, shards=count,
                      capacity=capacity_k, taken=taken[shard], starts_at=starts_at, layout=layout)
            for shard, capacity_k in enumerate(slices(capacity, count))]


def shards_get(*, event_id: str, count: int, consistent: bool = True) -> list[SeatShard]:
    """The event's ``count`` shards, in shard order (one BatchGetItem; missing shards are left out)."""
    found = SeatShard.batch_get([SeatShard.key_for(event_id, shard) for shard in range(count)],
                                consistent_read=consistent)
    return sorted(found, key=lambda item: int(item.shard))


def seats_taken(events: Iterable) -> None:
    """Set ``registered_count`` of each sharded event (``Event`` or ``EventSeats``) to its shards' sum, and add
    its lanes' waiting to ``waitlist_count`` (which counts only entries from before the lanes), in one
    BatchGetItem for all of them (PynamoDB splits it by 100 keys)."""
    sharded = [event for event in events if getattr(event, "seat_shards", None)]
    if not sharded:
        return
    keys = [SeatShard.key_for(_event_id(event), shard) for event in sharded for shard in range(int(event.seat_shards))]
    totals: dict[str, int] = {}
    waiting: dict[str, int] = {}
    for shard in SeatShard.batch_get(keys):
        totals[shard.event_id] = totals.get(shard.event_id, 0) + int(shard.taken)
        waiting[shard.event_id] = waiting.get(shard.event_id, 0) + int(shard.waiting or 0)
    for event in sharded:
        # Reading an event teaches this process its shard count: a registration from here then starts at the
        # student's home shard instead of shard 0 (a page view usually comes before the tap).
        remember_shards(_event_id(event), int(event.seat_shards))
        event.registered_count = totals.get(_event_id(event), 0)
        if hasattr(event, "waitlist_count"):  # EventCheckins, the door's view, has no waiting list
            event.waitlist_count = int(event.waitlist_count or 0) + waiting.get(_event_id(event), 0)


def _event_id(event) -> str:
    event_id = getattr(event, "event_id", None)
    return event_id if event_id else event.pk.removeprefix("EVENT#")


def event_seats(event_id: str) -> EventSeats:
    """The event's seat counters with ``registered_count`` summed from its shards and ``waitlist_count`` counting
    its lanes too (strongly consistent)."""
    seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    if seats.seat_shards:
        shards = shards_get(event_id=event_id, count=int(seats.seat_shards))
        seats.registered_count = sum(int(s.taken) for s in shards)
        seats.waitlist_count = int(seats.waitlist_count or 0) + sum(int(s.waiting or 0) for s in shards)
    return seats
