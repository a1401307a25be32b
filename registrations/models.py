"""PynamoDB models of the registrations app, all in the single table (see tems.dynamo)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from pynamodb.attributes import (
    MapAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)

from tems.clock import utcnow
from tems.dynamo import CollectionIndex, TableModel
from tems.text import TextAttribute

# Where a registration's claim and event-side copy live (docs/registrations.md, "Where a registration lives"): the
# claim under the student (``USER#<user>``), the copy in one of REGISTRATION_BUCKETS partitions of the event, not
# in the event's own partition, which would take every registration of an event (4 WCU of its 1,000 WCU/s).
# 16 partitions share an event's copies and 16 index partitions its attendee entries: a first registration writes
# its copy (2 WCU) and index entry (1 WCU) there, so at the rate one event's burst must be served each copy
# partition takes a quarter of AWS's 1,000 WCU/s per partition and each index partition an eighth; 8 would leave
# too little room for a burst above that rate. A page of the attendee list reads each bucket (one Query each),
# so more buckets cost every staff read.
REGISTRATION_BUCKETS = 16


# Registrants are reminded a day before, unless staff set another lead time on the event (0 turns it off).
DEFAULT_REMINDER_HOURS = 24
# Two weeks: the longest lead time the event form takes, and so how far ahead the reminder sweep looks.
MAX_REMINDER_HOURS = 336

# Waitlist offers (docs/offers.md): a day to answer unless staff set another window; an hour is
# the least, so a mail read over lunch is still in time; two weeks the most, as for the reminder.
DEFAULT_OFFER_HOURS = 24
MIN_OFFER_HOURS = 1
MAX_OFFER_HOURS = 336


class Event(TableModel):
    """``EVENT#<event_id>`` / ``METADATA``: what staff edit (versioned) plus the seat counters.

    Edits go through ``update()`` with the fields that changed, never ``save()``, so an edit can neither
    clobber the counters nor be applied on top of a version its author did not see.
    """

    METADATA = "METADATA"
    COLLECTION = "EVENTS"

    event_id = UnicodeAttribute()
    # What people typed: shown on every page, so read through TextAttribute (see tems.text).
    title = TextAttribute()
    description = TextAttribute(default="")
    location = TextAttribute(default="")
    starts_at = UTCDateTimeAttribute()
    capacity = NumberAttribute()
    # Not counters of their own: set on read to the seat shards' ``taken`` and the lanes' ``waiting`` summed
    # (registrations.seating.shards, ``seats_taken``), so the pages have them; stored only as 0 by the creation.
    registered_count = NumberAttribute(default=0)
    waitlist_count = NumberAttribute(default=0)
    # Seat shards (see SeatShard): how many there are and how much of the capacity they hold between them.
    seat_shards = NumberAttribute(null=True)
    sliced = NumberAttribute(null=True)
    # Moved only by the door's transactions (see EventCheckins); absent until the first check-in.
    checked_in_count = NumberAttribute(null=True)
    created_at = UTCDateTimeAttribute(default=utcnow)
    created_by = UnicodeAttribute(default="")
    updated_at = UTCDateTimeAttribute(default=utcnow)
    updated_by = UnicodeAttribute(default="")
    version = VersionAttribute()
    # Only the lab's scratch events expire: a backstop for when the lab's own clean-up never ran.
    expires_at = TTLAttribute(null=True)
    # Hours before the start at which confirmed registrants are reminded by e-mail (absent: the default; 0: off).
    reminder_hours = NumberAttribute(null=True)
    # Offer mode of the waiting list: a freed seat is offered to the head for this many hours (absent or 0: the
    # head is promoted at once). Read by a cancel through EventSeats, the view its transaction already reads.
    offer_hours = NumberAttribute(null=True)
    # Set when the event is called off (registrations.events.services, ``event_cancel_once``), in the same
    # transaction that copies it onto every seat shard: read only through ``is_cancelled``, the one predicate every
    # "not for a cancelled event" rule asks. Writes that admit someone check it by their own conditions.
    cancelled_at = UTCDateTimeAttribute(null=True)
    cancelled_by = UnicodeAttribute(null=True)

    by_start = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", default=COLLECTION)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK")

    PK_PREFIX = "EVENT#"

    @classmethod
    def pk_for(cls, event_id: str) -> str:
        return cls.PK_PREFIX + event_id

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return cls.pk_for(event_id), cls.METADATA

    @staticmethod
    def listing_key(starts_at: datetime, event_id: str) -> str:
        # ISO-8601 in UTC sorts chronologically as a string; the id breaks ties between simultaneous events.
        return f"{starts_at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#{event_id}"

    @property
    def seats_left(self) -> int:
        return max(self.capacity - self.registered_count, 0)

    @property
    def joins_waitlist(self) -> bool:
        """Whether a new registration would queue: no seat left, or people already waiting for the next one."""
        return self.registered_count >= self.capacity or self.waitlist_count > 0

    @property
    def is_cancelled(self) -> bool:
        """Whether the event was called off: no reminder goes out for it (registrations.messages.services)."""
        return self.cancelled_at is not None

    @property
    def offers_seats(self) -> bool:
        return bool(self.offer_hours)

    @property
    def reminder_hours_or_default(self) -> int:
        return DEFAULT_REMINDER_HOURS if self.reminder_hours is None else int(self.reminder_hours)

    @property
    def registration_closed(self) -> bool:
        """Registration closes at the start; only for showing it: the registration's condition decides."""
        return self.starts_at <= utcnow()


class EventSeats(TableModel):
    """The seat counters of the same ``EVENT#<id>`` / ``METADATA`` item, without its version attribute.

    Registrations move the counters inside their transactions through this view: PynamoDB adds a version
    check and bump to every write of a versioned model, and a registration must neither bump the version
    (that would turn every open edit page stale) nor fail because an edit happened meanwhile.
    """

    ENTITY = None  # a view of another model's item: writes no entity
    capacity = NumberAttribute()
    # Summed from the shards and lanes on read (``shards.event_seats``), as on Event.
    registered_count = NumberAttribute(default=0)
    waitlist_count = NumberAttribute(default=0)
    # Copied onto every seat shard, whose condition closes registration at the start.
    starts_at = UTCDateTimeAttribute(null=True)
    seat_shards = NumberAttribute(null=True)
    sliced = NumberAttribute(null=True)
    # The event's cancellation: a promotion and a registration's cancel write this item under "not cancelled".
    cancelled_at = UTCDateTimeAttribute(null=True)

    offer_hours = NumberAttribute(null=True)  # Event.offer_hours: how a freed seat reaches the waiting list

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.key_for(event_id)


class EventCancellation(TableModel):
    """The cancellation's view of the same ``EVENT#<id>`` / ``METADATA`` item, without its version attribute.

    The cancellation writes the event under "not cancelled yet" (so a second one changes nothing) and checks the
    shard count it copied the mark under; an open edit page then learns of it from its own refused
    write (``event_update`` checks ``cancelled_at``), not from a bumped version.
    """

    ENTITY = None  # a view of another model's item: writes no entity
    event_id = UnicodeAttribute()
    title = TextAttribute(null=True)  # the notice's subject
    seat_shards = NumberAttribute(null=True)
    cancelled_at = UTCDateTimeAttribute(null=True)
    cancelled_by = UnicodeAttribute(null=True)

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.key_for(event_id)


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
    cancelled_at = UTCDateTimeAttribute(null=True)
    # The version of the event's custom questions (``EventQuestions.version``; absent: the event never had any).
    # A registration is written only under ``questions`` = the version its answers were checked against, so an
    # answer checked against questions that changed meanwhile is refused by the seat's own condition.
    questions = NumberAttribute(null=True)

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


class EventQuestions(TableModel):
    """``EVENT#<event_id>`` / ``QUESTIONS``: the custom questions staff ask at registration, versioned.

    ``questions`` is the list as JSON (registrations.questions); each question keeps its id for life, so answers
    stay tied to it across edits. An edit is one transaction: this item under ``version = expected`` and every
    seat shard's ``questions`` set to the new version, so the shards refuse answers checked against an older
    list (registrations.questions.services). Absent: the event has no questions.
    """

    ITEM = "QUESTIONS"

    event_id = UnicodeAttribute()
    questions = TextAttribute(default="[]")
    updated_at = UTCDateTimeAttribute(default=utcnow)
    updated_by = UnicodeAttribute(default="")
    version = VersionAttribute()

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.pk_for(event_id), cls.ITEM


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


CONFIRMED = "confirmed"
WAITLISTED = "waitlisted"
CANCELLED = "cancelled"
# Holding a seat offered from the waiting list until the offer's end (Offer); counted as a taken seat.
OFFERED = "offered"


class RegistrationFields:
    """What the claim and both registration copies hold alike (written together, from the same values)."""

    registration_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    user_id = UnicodeAttribute()  # tems.identity.user_key: immutable, never a username
    user_name = UnicodeAttribute(null=True)  # the display name at registration (the API's "user")
    status = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    ticket = NumberAttribute(null=True)  # the waitlist ticket while waitlisted
    # The seat shard holding a confirmed registration's seat (its cancel frees that one); absent while waiting.
    shard = NumberAttribute(null=True)
    # The waiting-list lane (a shard number) whose entry holds the ticket; absent unless waiting.
    lane = NumberAttribute(null=True)


class RegistrationClaim(RegistrationFields, TableModel):
    """``USER#<user_id>`` / ``REGCLAIM#<event_id>``: the one item that makes "one registration per student" true.

    It is written with ``attribute_not_exists`` in the transaction that creates a registration and deleted in
    the one that cancels it, so it follows the registration's life (no TTL). It holds what a loser needs to
    answer "already registered" from the ALL_OLD image of its failed transaction, without another read. It lives
    in the student's partition, so a burst for one event spreads over its students' partitions instead of
    writing the event's.
    """

    SK_PREFIX = "REGCLAIM#"

    @classmethod
    def key_for(cls, event_id: str, user_id: str) -> tuple[str, str]:
        return Registration.user_pk_for(user_id), cls.SK_PREFIX + event_id


class Registration(RegistrationFields, TableModel):
    """One registration, stored twice: ``USER#<user_id>`` / ``REGISTRATION#<id>`` (the student's list) and
    ``EVENTREG#<event_id>#<b>`` / ``REGISTRATION#<id>`` (the event's list, in bucket ``b`` of
    REGISTRATION_BUCKETS, a stable hash of the id). Both copies are written, changed and deleted together in
    one transaction. A waitlisted registration has no event-side copy while it waits: its ``WaitlistEntry`` is
    that copy, and its promotion writes this one.
    """

    SK_PREFIX = "REGISTRATION#"

    promoted_at = UTCDateTimeAttribute(null=True)
    # The answers to the event's custom questions, as given (registrations.questions): on both copies, never on
    # the claim, and never rewritten, so a question edited or removed later loses no answer.
    answers = TextAttribute(null=True)
    # While OFFERED: when the offer ends (Offer.ends_at), so the student's list shows it without another read.
    offer_ends_at = UTCDateTimeAttribute(null=True)

    USER_PK_PREFIX = "USER#"
    EVENT_PK_PREFIX = "EVENTREG#"

    @classmethod
    def user_pk_for(cls, user_id: str) -> str:
        return cls.USER_PK_PREFIX + user_id

    @staticmethod
    def bucket_for(registration_id: str) -> int:
        """The event-side bucket of a registration: a stable hash of its id (never Python's salted ``hash``)."""
        digest = hashlib.blake2b(registration_id.encode(), digest_size=4).digest()
        return int.from_bytes(digest, "big") % REGISTRATION_BUCKETS

    @classmethod
    def event_pk_for(cls, event_id: str, bucket: int) -> str:
        return f"{cls.EVENT_PK_PREFIX}{event_id}#{bucket}"

    @classmethod
    def is_event_side(cls, pk: str) -> bool:
        """Whether a registration item with partition key ``pk`` is the event's copy (else the user's)."""
        return pk.startswith(cls.EVENT_PK_PREFIX)

    @classmethod
    def is_user_side(cls, pk: str) -> bool:
        return pk.startswith(cls.USER_PK_PREFIX)

    # Only the event-side copy is in GSI1 (sparse): the event's attendees by name, so a username prefix is a
    # key condition (see registrations.attendees).
    attendees = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", null=True)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK", null=True)

    @staticmethod
    def attendees_pk_for(event_id: str, bucket: int) -> str:
        return f"ATTENDEES#{event_id}#{bucket}"

    @staticmethod
    def attendee_name_key(name: str) -> str:
        # Case-folded, so "ali" finds "Alice"; a search prefix is folded the same way.
        return name.casefold()

    @classmethod
    def attendee_sk_for(cls, name: str, registration_id: str) -> str:
        # The id after the name keeps two students of the same name apart.
        return f"{cls.attendee_name_key(name)}#{registration_id}"

    @classmethod
    def attendee_index_key_for(cls, event_id: str, name: str, registration_id: str) -> tuple[str, str]:
        """The copy's GSI1 key: the index partition of the copy's own bucket, so both spread the same way."""
        return (cls.attendees_pk_for(event_id, cls.bucket_for(registration_id)),
                cls.attendee_sk_for(name, registration_id))

    @classmethod
    def user_key_for(cls, user_id: str, registration_id: str) -> tuple[str, str]:
        return cls.user_pk_for(user_id), cls.SK_PREFIX + registration_id

    @classmethod
    def event_key_for(cls, event_id: str, registration_id: str) -> tuple[str, str]:
        return cls.event_pk_for(event_id, cls.bucket_for(registration_id)), cls.SK_PREFIX + registration_id


class WaitlistEntry(TableModel):
    """``EVENTSEATS#<event_id>#<lane>`` / ``WAITLIST#<ticket>``: one place in the event's FIFO waiting list, in
    the partition of the lane (seat shard) that handed out the ticket.

    Tickets come in blocks from the event's queue (WaitlistQueue, see registrations.seating.lanes): unique, ordered
    by when their block was claimed, and the head of the queue is the smallest ticket over all lanes (one
    Query with Limit 1 per lane). A position is never stored: it is counted on read, so a cancellation in the
    middle rewrites nothing.

    An entry is also the event-side copy of its waitlisted registration: it carries the registration's fields
    and its attendee-index key, and no ``EVENTREG#`` copy exists until the promotion writes one (a join is then
    one item fewer, and pays one item's write units less).
    """

    SK_PREFIX = "WAITLIST#"
    # Zero-padded so that string order is number order; 10 digits outlast any event's waiting list.
    TICKET_DIGITS = 10

    registration_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    user_id = UnicodeAttribute()
    ticket = NumberAttribute()
    lane = NumberAttribute()
    # The event-side copy's fields: read as a Registration by the attendee list.
    user_name = UnicodeAttribute(null=True)
    status = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    answers = TextAttribute(null=True)  # as on Registration: the promotion copies them to the confirmed copy
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", null=True)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK", null=True)

    @staticmethod
    def is_entry(item: dict) -> bool:
        """Whether a raw item of a scan (``check_invariants``) is an entry."""
        return item.get("entity") == "WaitlistEntry"

    @classmethod
    def sk_for(cls, ticket: int) -> str:
        return f"{cls.SK_PREFIX}{ticket:0{cls.TICKET_DIGITS}d}"

    @classmethod
    def lane_pk_for(cls, event_id: str, lane: int) -> str:
        return SeatShard.pk_for(event_id, int(lane))

    @classmethod
    def key_for(cls, event_id: str, ticket: int, lane: int) -> tuple[str, str]:
        return cls.lane_pk_for(event_id, lane), cls.sk_for(ticket)


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


class EventCheckins(TableModel):
    """The door's counter on the same ``EVENT#<id>`` / ``METADATA`` item, without its version attribute.

    Like ``EventSeats``, a view that lets a check-in move its counter inside its transaction without bumping
    the event's version (an open edit page must not turn stale because the doors are busy).
    """

    ENTITY = None  # a view of another model's item: writes no entity
    registered_count = NumberAttribute(default=0)  # summed from the seat shards on read (``shards.seats_taken``)
    checked_in_count = NumberAttribute(null=True)  # absent until the first check-in
    seat_shards = NumberAttribute(null=True)
    cancelled_at = UTCDateTimeAttribute(null=True)  # the door admits nobody to a cancelled event

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.key_for(event_id)


class CheckIn(TableModel):
    """``EVENT#<event_id>`` / ``CHECKIN#<registration_id>``: the one item that makes "admitted once" true.

    Put with ``attribute_not_exists`` in the check-in's transaction, so of any number of doors scanning the same
    ticket exactly one writes it; every other door gets it back as the ALL_OLD image of its failed condition
    and answers with the first check-in's details, without a read. An undo deletes it.
    """

    SK_PREFIX = "CHECKIN#"

    registration_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    user_id = UnicodeAttribute()
    checked_in_at = UTCDateTimeAttribute()
    checked_in_by = UnicodeAttribute()
    door = UnicodeAttribute(default="")
    # The scan that admitted the ticket (its Idempotency-Key), so the history can tell scans apart.
    scan_key = UnicodeAttribute(default="")

    @classmethod
    def key_for(cls, event_id: str, registration_id: str) -> tuple[str, str]:
        return Event.pk_for(event_id), cls.SK_PREFIX + registration_id


class CheckInLogEntry(TableModel):
    """``EVENT#<event_id>`` / ``CHECKINLOG#<time>#<id>``: the door's history (check-ins and undos), never rewritten.

    Written in the same transaction as the change it records, so the history and the state cannot disagree.
    """

    SK_PREFIX = "CHECKINLOG#"

    event_id = UnicodeAttribute()
    registration_id = UnicodeAttribute()
    action = UnicodeAttribute()  # "checked_in" | "undone"
    at = UTCDateTimeAttribute()
    by = UnicodeAttribute()
    door = UnicodeAttribute(default="")

    @classmethod
    def key_for(cls, event_id: str, at: datetime, entry_id: str) -> tuple[str, str]:
        # ISO-8601 in UTC sorts chronologically as a string; the id keeps two entries of one instant apart.
        stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return Event.pk_for(event_id), f"{cls.SK_PREFIX}{stamp}#{entry_id}"


class EventMessage(TableModel):
    """``EVENTMSG#<event_id>`` / ``MESSAGE#<message_id>``: a mail to an event's attendees and how far its fan-out got.

    A staff message's id is derived from the event, the author and the tap's idempotency key; a reminder's from
    the event alone: either is written under ``attribute_not_exists``, so a double-click or a second sweep makes
    no second message. The relay fans it out a page at a time (registrations.messages.services): each page's
    per-recipient outbox messages and the move of the cursor (``partition``, ``last_key``, ``pages``) are one
    transaction conditioned on ``pages`` as read, so a page is queued exactly once however the relay dies.
    """

    SK_PREFIX = "MESSAGE#"
    PK_PREFIX = "EVENTMSG#"
    LIST_PREFIX = "EVENTMSGS#"
    STAFF = "staff"
    REMINDER = "reminder"
    CANCELLATION = "cancellation"

    event_id = UnicodeAttribute()
    message_id = UnicodeAttribute()
    kind = UnicodeAttribute()  # STAFF | REMINDER | CANCELLATION
    audience = UnicodeAttribute()
    subject = TextAttribute()
    body = TextAttribute()
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute(default="")
    # Only registrations made before this are recipients: a reminder's time, or when a staff message was sent.
    registered_before = UTCDateTimeAttribute()
    # The fan-out's cursor: the index of the partition being read (see the audience's list), the last key read
    # in it (JSON; absent: from its start), how many pages were queued, how many recipients; ``done_at`` when
    # every partition was read.
    partition = NumberAttribute(default=0)
    last_key = UnicodeAttribute(null=True)
    pages = NumberAttribute(default=0)
    queued = NumberAttribute(default=0)
    done_at = UTCDateTimeAttribute(null=True)
    # The event's messages newest first: GSI1 under ``EVENTMSGS#<event_id>``, sorted by when each was written (the
    # base key is derived from the tap, so it cannot sort by time).
    listing = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", null=True)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK", null=True)

    @classmethod
    def pk_for(cls, event_id: str) -> str:
        return cls.PK_PREFIX + event_id

    @classmethod
    def list_pk_for(cls, event_id: str) -> str:
        return cls.LIST_PREFIX + event_id

    @classmethod
    def index_fields(cls, event_id: str, message_id: str, created_at: datetime) -> dict[str, str]:
        """The message's place in its event's list: ISO-8601 in UTC sorts by time, the id breaks ties."""
        return {"gsi1pk": cls.list_pk_for(event_id), "gsi1sk": Event.listing_key(created_at, message_id)}

    @classmethod
    def key_for(cls, event_id: str, message_id: str) -> tuple[str, str]:
        return cls.pk_for(event_id), cls.SK_PREFIX + message_id

    @staticmethod
    def staff_id_for(event_id: str, user_id: str, idempotency_key: str) -> str:
        return hashlib.sha256(f"staff:{event_id}:{user_id}:{idempotency_key}".encode()).hexdigest()[:32]

    @staticmethod
    def reminder_id_for(event_id: str) -> str:
        return hashlib.sha256(f"reminder:{event_id}".encode()).hexdigest()[:32]

    @staticmethod
    def cancellation_id_for(event_id: str) -> str:
        """An event is called off once: its one cancellation notice, however many taps and keys ask for it."""
        return hashlib.sha256(f"cancellation:{event_id}".encode()).hexdigest()[:32]

    @staticmethod
    def delivery_id_for(message_id: str, registration_id: str) -> str:
        """The outbox message id (and so the mail's Message-ID) of one recipient's copy: the same on every try."""
        return hashlib.sha256(f"delivery:{message_id}:{registration_id}".encode()).hexdigest()[:32]


class Offer(TableModel):
    """``USER#<user_id>`` / ``OFFER#<registration_id>``: a seat freed in an event in offer mode, held for the
    head of its waiting list until ``ends_at``, and how the offer ended.

    Written with ``attribute_not_exists`` in the transaction that frees the seat (the seat stays taken and the
    registration becomes OFFERED), so a seat is offered once. Accepting, declining and the expiry are each one
    transaction conditioned on ``state = offered`` here, the accept also on ``ends_at > now`` and the expiry
    on ``ends_at <= now``: of all of them exactly one ends the offer, and a late accept fails by the clock even
    before anything sweeps. While offered it is in GSI1 under ``OFFERS`` by its end (the expiry sweep's
    Query); an ended offer leaves the index and stays as the answer to a late tap until its TTL.
    """

    SK_PREFIX = "OFFER#"
    COLLECTION = "OFFERS"
    # How an offer ends; ``state`` is OFFERED until then.
    ACCEPTED = "accepted"
    DECLINED = "declined"
    EXPIRED = "expired"
    # The event was cancelled while the offer was open: the registration stays offered, as every registration of
    # a cancelled event stays as it was, and nothing is handed on.
    CALLED_OFF = "called_off"
    # An ended offer answers late taps for a month, then DynamoDB's TTL removes it.
    KEEP_ENDED_DAYS = 30

    registration_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    user_id = UnicodeAttribute()
    state = UnicodeAttribute()
    shard = NumberAttribute()  # the seat shard of the seat held
    offered_at = UTCDateTimeAttribute()
    ends_at = UTCDateTimeAttribute()
    ended_at = UTCDateTimeAttribute(null=True)
    expires_at = TTLAttribute(null=True)

    by_end = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", null=True)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK", null=True)

    @classmethod
    def key_for(cls, user_id: str, registration_id: str) -> tuple[str, str]:
        return Registration.user_pk_for(user_id), cls.SK_PREFIX + registration_id

    @staticmethod
    def listing_key(ends_at: datetime, registration_id: str) -> str:
        # Fixed-width UTC, so string order is time order and the sweep asks for "ended by now" as a key range.
        return f"{ends_at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#{registration_id}"
