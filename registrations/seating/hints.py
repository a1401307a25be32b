"""What this process has seen of events' seats: routing hints, one bounded object with one reset.

Every hint here only chooses where a request looks first, never what it writes: each write's own condition
decides, and a refused write's ALL_OLD image (or a read) corrects the hint. So a hint may be stale, lost to a
race between threads, or forgotten when the object is full, and nothing but the cost of a request changes.

Per event (the table's name is part of the key, so tests on several tables in one process never share one):

- ``shards``: how many seat shards the event has (1, shard 0 which every event has, if unknown). Counts never
  shrink, so a stale count only names a shard that exists.
- ``full``: the waiting list's gate was last seen closed (every seat taken): a newcomer reads its lane (with
  its claim and key record, one BatchGetItem) instead of sending a seat attempt that a full shard refuses after
  holding it and paying its six items' write units.
- ``full_shards``: the shards last seen with every seat taken (for one shard count): the same choice for one
  shard. Each keeps when the request that showed it so was sent, and ``open_gate`` the earliest moment the gate
  was read open at its current epoch: a shard seen full after that moment is full still while the epoch holds,
  so the gate's look need not read it (the close's own condition checks the epoch).
- ``placed``: the seats this process took or is taking in each shard (for one shard count), for
  ``shards.first_shard``: a first seat attempt counts when it is sent, and stops counting if it did not commit.
- ``lanes``: each lane's block as last seen (``lane_next``, ``lane_end``) and when, so a position may skip
  reading a lane that cannot hold an unused ticket below it (``positions.lane_blocks``).
- ``floors``: the lowest ticket seen waiting in each lane, so a reader of the waiting list's first entries may skip
  a lane whose floor is above all it needs (``selectors.waitlist_heads``). Unlike the hints above, a floor
  decides what is read, so it must stay true, and it does: a lane hands its tickets out in increasing order
  (blocks are claimed from one sequence and a lane installs them in order), so every entry a lane will ever hold
  is at or above the lowest one it held when read.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from registrations.seating.models import SeatShard

# The events remembered at once; the least recently used is forgotten first. A hint is a few integers per shard
# (at most MAX_SHARDS of them), so this bounds the process's memory however many events it serves.
MAX_EVENTS = 10_000


@dataclass
class EventHints:
    """What this process last saw of one event's seats (see the module doc)."""

    shards: int | None = None
    full: bool = False
    # (shard count then, {shard seen full: when the request that showed it so was sent, time.monotonic()})
    full_shards: tuple[int, dict[int, float]] | None = None
    open_gate: tuple[int, int, float] | None = None  # (epoch, shard count, when a read of it so had returned)
    placed: tuple[int, list[int]] | None = None  # (shard count then, seats taken or being taken per shard)
    lanes: dict[int, tuple[float, int | None, int | None]] = field(default_factory=dict)
    floors: dict[int, int] = field(default_factory=dict)


class Hints:
    """Per-process routing hints for events' seats, bounded to ``max_events`` events (least recently used out)."""

    def __init__(self, *, max_events: int = MAX_EVENTS) -> None:
        self.max_events = max_events
        self._events: OrderedDict[tuple[str, str], EventHints] = OrderedDict()
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Forget everything: a cold process."""
        with self._lock:
            self._events.clear()

    def _peek(self, event_id: str) -> EventHints | None:
        return self._events.get((SeatShard.Meta.table_name, event_id))

    def _of(self, event_id: str) -> EventHints:
        key = (SeatShard.Meta.table_name, event_id)
        with self._lock:
            hints = self._events.get(key)
            if hints is None:
                hints = self._events[key] = EventHints()
                while len(self._events) > self.max_events:
                    self._events.popitem(last=False)
            else:
                self._events.move_to_end(key)
            return hints

    # --- shard counts ---------------------------------------------------------------------------------------

    def shards(self, event_id: str) -> int:
        """How many shards this process last saw the event have; 1 (shard 0) if unknown."""
        hints = self._peek(event_id)
        return 1 if hints is None or hints.shards is None else hints.shards

    def remember_shards(self, event_id: str, count: int) -> None:
        self._of(event_id).shards = int(count)

    # --- full events and full shards ------------------------------------------------------------------------

    def full(self, event_id: str) -> bool:
        """Whether this process last saw the event's waiting-list gate closed (every seat taken)."""
        hints = self._peek(event_id)
        return hints is not None and hints.full

    def remember_full(self, event_id: str, full: bool) -> None:
        if full:
            self._of(event_id).full = True
        elif (hints := self._peek(event_id)) is not None:
            hints.full = False

    def full_shard(self, event_id: str, shard: int, count: int) -> bool:
        """Whether this process's last image of ``shard`` (of ``count``) showed every seat taken; another count
        (a re-slicing) forgets it."""
        hints = self._peek(event_id)
        known = None if hints is None else hints.full_shards
        return known is not None and known[0] == count and shard in known[1]

    def remember_shard(self, event_id: str, shard: int, count: int, *, full: bool, sent_at: float = 0.0) -> None:
        """Keep whether an image of ``shard`` (of ``count``) showed every seat taken, and, if so, when the request
        that brought it was sent (``time.monotonic()`` at or before the send; 0: unknown)."""
        hints = self._peek(event_id) if not full else self._of(event_id)
        if hints is None:
            return
        with self._lock:  # ``full_since`` reads the shards while other threads learn more
            known = hints.full_shards
            if known is None or known[0] != count:
                if not full:
                    return
                known = hints.full_shards = (count, {})
            if full:
                known[1][shard] = max(known[1].get(shard, 0.0), sent_at)
            else:
                known[1].pop(shard, None)

    def open_gate_since(self, event_id: str, *, epoch: int, count: int, returned_at: float) -> float:
        """A read of the event's gate, open at ``epoch`` with ``count`` shards, returned at ``returned_at``: the
        earliest moment this process knows the gate was so. Its epoch only grows, and moves with every seat freed
        for newcomers, so no seat was freed between then and this read (an older epoch is not kept)."""
        hints = self._of(event_id)
        with self._lock:
            seen = hints.open_gate
            if seen is not None and (seen[0], seen[1]) == (epoch, count):
                return min(seen[2], returned_at)
            if seen is None or epoch > seen[0] or count != seen[1]:
                hints.open_gate = (epoch, count, returned_at)
            return returned_at

    def full_since(self, event_id: str, count: int, since: float) -> set[int]:
        """The shards (of ``count``) that an image showed full, brought by a request sent after ``since``."""
        hints = self._peek(event_id)
        known = None if hints is None else hints.full_shards
        if known is None or known[0] != count:
            return set()
        with self._lock:
            return {shard for shard, sent in known[1].items() if sent > since}

    # --- seats this process placed --------------------------------------------------------------------------

    def placed(self, event_id: str, count: int) -> list[int] | None:
        """The seats this process took or is taking in each of the event's ``count`` shards, if it counted for
        that count."""
        hints = self._peek(event_id)
        placed = None if hints is None else hints.placed
        return placed[1] if placed is not None and placed[0] == count else None

    def open_shards(self, event_id: str, count: int) -> list[int]:
        """The shards (of ``count``) that no image in this process showed full."""
        hints = self._peek(event_id)
        known = None if hints is None else hints.full_shards
        if known is None or known[0] != count:
            return list(range(count))
        with self._lock:
            return [shard for shard in range(count) if shard not in known[1]]

    def place(self, event_id: str, shard: int, count: int, *, seats: int = 1) -> None:
        """Count ``seats`` (-1: a seat attempt counted when sent that did not commit) in ``shard`` (of ``count``).
        Unlocked: a count lost to a race between threads only makes the hint a seat less exact."""
        hints = self._of(event_id)
        if hints.placed is None or hints.placed[0] != count:
            if seats < 0:
                return  # counted for another shard count, which is forgotten
            hints.placed = (count, [0] * count)
        if shard < count:
            hints.placed[1][shard] += seats

    # --- lanes' blocks --------------------------------------------------------------------------------------

    def remember_lane(self, lane: SeatShard) -> None:
        """Keep ``lane``'s block as this process saw it, just now (a read's image, or a refused write's ALL_OLD)."""
        self._of(lane.event_id).lanes[int(lane.shard)] = (
            time.monotonic(), None if lane.lane_next is None else int(lane.lane_next),
            None if lane.lane_end is None else int(lane.lane_end))

    def lane(self, event_id: str, shard: int) -> tuple[float, int | None, int | None] | None:
        """(when seen, ``lane_next``, ``lane_end``) of the lane's last image in this process, or None."""
        hints = self._peek(event_id)
        return None if hints is None else hints.lanes.get(shard)

    # --- lanes' floors --------------------------------------------------------------------------------------

    def lane_floors(self, event_id: str) -> dict[int, int]:
        """Each lane's floor (see the module doc) as this process last learned it; lanes it never read are absent."""
        hints = self._peek(event_id)
        if hints is None:
            return {}
        with self._lock:  # a copy taken while another thread raises a floor
            return dict(hints.floors)

    def raise_lane_floor(self, event_id: str, lane: int, ticket: int) -> None:
        """``ticket`` was the lowest waiting in ``lane`` when read: its floor is at least that (floors only rise,
        so a slower reader's older answer never lowers one)."""
        floors = self._of(event_id).floors
        with self._lock:
            floors[lane] = max(floors.get(lane, ticket), ticket)


# The process's one instance: every module reads and teaches this one, and tests reset it.
hints = Hints()
