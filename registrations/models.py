"""PynamoDB models of the registration itself (its claim, its two copies, its waiting-list entry), in the single
table (see tems.dynamo). Each feature keeps its items in its own ``models.py`` (``events``, ``seating``,
``offers``, ``messages``, ``questions``, ``checkins``, ``privacy``); ``registrations.apps`` loads them all."""

from __future__ import annotations

import hashlib

from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)

from registrations.seating.models import SeatShard
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
