"""The seating items of an event (``SeatShard``, ``SeatGate``, ``WaitlistQueue``, ``WaitlistDepartures``), in the single
table (see tems.dynamo and this package's modules)."""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    UTCDateTimeAttribute,
)

from registrations.events.models import Event
from tems.dynamo import TableModel


class SeatShard(TableModel):
    """``EVENTSEATS#<event_id>#<k>`` / ``SHARD``: one slice of an event's seats, in a partition of its own.

    A confirmed registration takes one seat of one shard (``taken + 1`` under ``taken < capacity``) and nothing
    else of the event, so the registrations of one event spread over ``shards`` items and partitions instead of
    queueing on the event's item (see docs/registrations.md, "Seat shards"). ``capacity`` is this shard's slice;
    the slices add up to the event's ``sliced`` (its capacity, except while a raise waits to be handed to the
    waiting list). ``shards`` and ``starts_at`` are copies of the event's, so a refused seat's ALL_OLD image says
    where else to look and the seat's own condition can close registration at the start.
    ``cancelled_at`` is the event's cancellation, copied onto every shard by the cancellation's transaction: a seat
    or a ticket is taken only while it is absent, so a cancelled event admits nobody without a read.
    """

    ITEM = "SHARD"
    PK_PREFIX = "EVENTSEATS#"

    event_id = UnicodeAttribute()
    shard = NumberAttribute()
    shards = NumberAttribute()
    capacity = NumberAttribute()
    taken = NumberAttribute(default=0)
    starts_at = UTCDateTimeAttribute(null=True)
    # The event's registration window (absent: open until the start), copied like the start.
    opens_at = UTCDateTimeAttribute(null=True)
    closes_at = UTCDateTimeAttribute(null=True)
    cancelled_at = UTCDateTimeAttribute(null=True)
    # The event is a draft waiting for approval: set on every shard at its creation and removed on every shard by
    # the publishing transaction, so nobody registers for a draft whatever they know of its id.
    draft = BooleanAttribute(null=True)
    # The version of the event's custom questions (``EventQuestions.version``; absent: the event never had any).
    # A registration is written only under ``questions`` = the version its answers were checked against, so an
    # answer checked against questions that changed meanwhile is refused by the seat's own condition.
    questions = NumberAttribute(null=True)
    # Past the lanes only: the tokens of the edits changing this shard's copies right now
    # (registrations.seating.holds); a seat is taken only while there is none.
    held = UnicodeSetAttribute(null=True)

    # Each shard is also one lane of the event's waiting list (see registrations.seating.lanes, "Lanes"). ``gate`` is
    # the lane's copy of the event's gate (``SeatGate.state``): a join needs it closed. A lane copies a closed
    # gate only while its ``opened`` is the gate's (no reopening since), and every reopening opens every lane
    # in the gate's own transaction; absent or 0 is open. The lane hands out the tickets of its current block
    # [lane_next, lane_end), claimed from the event's queue (WaitlistQueue.seq) at ``lane_at``; ``lane_left`` is the
    # queue's ``left`` at that claim; ``waiting`` counts the lane's entries.
    gate = NumberAttribute(null=True)
    opened = NumberAttribute(null=True)
    lane_next = NumberAttribute(null=True)
    lane_end = NumberAttribute(null=True)
    lane_at = UTCDateTimeAttribute(null=True)
    lane_left = NumberAttribute(null=True)
    lane_size = NumberAttribute(null=True)
    waiting = NumberAttribute(null=True)

    @classmethod
    def key_for(cls, event_id: str, shard: int) -> tuple[str, str]:
        return cls.pk_for(event_id, shard), cls.ITEM

    @classmethod
    def pk_for(cls, event_id: str, shard: int) -> str:
        return f"{cls.PK_PREFIX}{event_id}#{shard}"

    @property
    def gate_closed(self) -> bool:
        return bool(self.gate)

    @property
    def unissued(self) -> tuple[int, int]:
        """The lane's block tickets not handed out yet, as [start, end)."""
        start = int(self.lane_next or 0)
        return start, max(int(self.lane_end or 0), start)


class SeatGate(TableModel):
    """``EVENTGATE#<event_id>`` / ``GATE``: whether the event's waiting list takes joiners, in an item of its own.

    ``state`` is 0 (open: some shard may have a free seat, so a newcomer takes it), CLOSED (every shard was full
    when it closed, and stays so: a seat freed since went to the head of the waiting list) or RAISED (closed,
    with seats of a raise to hand to the people waiting first). It closes by ONE write conditioned on
    ``epoch``, which every write that frees a seat for newcomers (a cancel with nobody waiting, an edit of the
    slices, a reopening) bumps in its own transaction: the closer reads the gate, then every shard (one
    strongly consistent BatchGetItem, which holds nothing), and writes only if the epoch is still what it read,
    so no seat was freed after the shards were read and the event was full at that instant. ``opened`` counts
    reopenings; each lane copies a closed gate with its own single write under ``opened`` as read here.
    ``shards`` is the event's shard count, so the closer knows which shards to read.
    """

    ITEM = "GATE"
    PK_PREFIX = "EVENTGATE#"

    event_id = UnicodeAttribute()
    state = NumberAttribute(default=0)
    epoch = NumberAttribute(default=0)
    opened = NumberAttribute(default=0)
    shards = NumberAttribute()

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return cls.pk_for(event_id), cls.ITEM

    @classmethod
    def pk_for(cls, event_id: str) -> str:
        return f"{cls.PK_PREFIX}{event_id}"

    @property
    def closed(self) -> bool:
        return bool(self.state)


class WaitlistQueue(TableModel):
    """``EVENTQUEUE#<event_id>`` / ``QUEUE``: where the lanes of an event's waiting list take their blocks of
    tickets, in a partition and an item of its own (not the event's item, which an index copies whole).

    A block is claimed by ONE conditional UpdateItem, never inside a transaction: a transaction holds its items
    for its whole time, so transactions on one item queue behind each other, while single writes hold
    nothing and the item takes its partition's 1,000 WCU a second (docs/registrations.md, "The waiting list").
    ``seq`` is the last ticket claimed; ``left`` counts the tickets that left the list or went unused, as of
    now (a join's answer subtracts it). ``claim_last[k]``/``claim_size[k]`` are lane k's latest block; the lane
    has installed it when its ``lane_end - 1`` equals ``claim_last[k]``, otherwise the block is *pending*: its
    tickets are unused until the lane's next join installs it. ``claim_from[k]`` is the ``lane_next`` of the
    block it replaced as the claim saw it, so the install can correct ``left`` if the lane moved meanwhile;
    ``claim_at[k]`` says when, so a claim left pending too long is never handed out late.
    """

    ITEM = "QUEUE"
    PK_PREFIX = "EVENTQUEUE#"

    event_id = UnicodeAttribute()
    seq = NumberAttribute(null=True)
    left = NumberAttribute(null=True)
    claim_last = MapAttribute(null=True)
    claim_size = MapAttribute(null=True)
    claim_from = MapAttribute(null=True)
    claim_at = MapAttribute(null=True)  # when, in milliseconds since the epoch

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return cls.pk_for(event_id), cls.ITEM

    @classmethod
    def pk_for(cls, event_id: str) -> str:
        return f"{cls.PK_PREFIX}{event_id}"

    @classmethod
    def new(cls, event_id: str, *, seq: int = 0, left: int = 0) -> WaitlistQueue:
        return cls(*cls.key_for(event_id), event_id=event_id, seq=seq, left=left, claim_last={}, claim_size={},
                   claim_from={}, claim_at={})

    def pending(self, lane: int, lane_end: int | None) -> tuple[int, int] | None:
        """Lane ``lane``'s claimed block [first, end) if the lane (whose current block ends at ``lane_end``) has
        not installed it yet, else None."""
        claims = self.claim_last.as_dict() if self.claim_last is not None else {}
        last = claims.get(str(lane))
        if last is None or (lane_end is not None and int(last) == int(lane_end) - 1):
            return None
        size = int(self.claim_size.as_dict()[str(lane)])
        return int(last) - size + 1, int(last) + 1

    def lanes_claimed(self) -> list[int]:
        return sorted(int(k) for k in (self.claim_last.as_dict() if self.claim_last is not None else {}))


class WaitlistDepartures(TableModel):
    """``EVENT#<event_id>`` / ``WAITLEFT#<level>#<block>``: how many waitlist tickets left, per digit (see
    registrations.seating.positions).

    One node of a base-``FANOUT`` tree over ticket numbers: the node of level ``k`` and block ``b`` covers the
    tickets ``b * FANOUT**(k+1)`` up to the next block, and its attribute ``dNN`` counts the departures (a
    cancellation or a promotion) whose ticket has digit ``NN`` at level ``k`` in that block. Moved only by ADD
    inside the transaction that removes the entry; an item nobody departed from does not exist (reads as 0).
    """

    SK_PREFIX = "WAITLEFT#"
    # 100 digits per node: a node stays under 1 KB (one write unit, one read unit), and five levels cover every
    # ten-digit ticket (WaitlistEntry.TICKET_DIGITS), so a position is the sum of at most five nodes' digits.
    FANOUT = 100
    LEVELS = 5

    # d00 .. d99, declared in a loop: a hundred hand-written lines would say less.
    for _digit in range(FANOUT):
        vars()[f"d{_digit:02d}"] = NumberAttribute(null=True)
    del _digit

    @staticmethod
    def digit_name(digit: int) -> str:
        return f"d{digit:02d}"

    @classmethod
    def key_for(cls, event_id: str, level: int, block: int) -> tuple[str, str]:
        return Event.pk_for(event_id), f"{cls.SK_PREFIX}{level}#{block:010d}"

    def digit_sum(self, below: int) -> int:
        """Departures recorded under the digits 0 .. below-1 of this node."""
        return sum(int(getattr(self, self.digit_name(digit)) or 0) for digit in range(below))
