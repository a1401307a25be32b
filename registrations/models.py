"""PynamoDB models of the registrations app, all in the single table (see tems.dynamo)."""

from __future__ import annotations

from datetime import UTC, datetime

from pynamodb.attributes import (
    NumberAttribute, TTLAttribute, UnicodeAttribute, UTCDateTimeAttribute, VersionAttribute,
)
from pynamodb.models import Model

from tems.clock import utcnow
from tems.dynamo import CollectionIndex, TableMeta
from tems.text import TextAttribute


class Event(Model):
    """``EVENT#<event_id>`` / ``METADATA``: what staff edit (versioned) plus the seat counters.

    Edits go through ``update()`` with the fields that changed, never ``save()``, so an edit can neither
    clobber the counters nor be applied on top of a version its author did not see.
    """

    class Meta(TableMeta):
        pass

    METADATA = "METADATA"
    COLLECTION = "EVENTS"

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    entity = UnicodeAttribute(default="Event")
    event_id = UnicodeAttribute()
    # What people typed: shown on every page, so read through TextAttribute (see tems.text).
    title = TextAttribute()
    description = TextAttribute(default="")
    location = TextAttribute(default="")
    starts_at = UTCDateTimeAttribute()
    capacity = NumberAttribute()
    registered_count = NumberAttribute(default=0)
    waitlist_count = NumberAttribute(default=0)
    # The last waitlist ticket handed out (see WaitlistEntry); only ever grows.
    waitlist_seq = NumberAttribute(default=0)
    # Moved only by the door's transactions (see EventCheckins); absent until the first check-in.
    checked_in_count = NumberAttribute(null=True)
    created_at = UTCDateTimeAttribute(default=utcnow)
    created_by = UnicodeAttribute(default="")
    updated_at = UTCDateTimeAttribute(default=utcnow)
    updated_by = UnicodeAttribute(default="")
    version = VersionAttribute()
    # Only the lab's scratch events expire: a backstop for when the lab's own clean-up never ran.
    expires_at = TTLAttribute(null=True)

    by_start = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", default=COLLECTION)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK")

    @staticmethod
    def pk_for(event_id: str) -> str:
        return f"EVENT#{event_id}"

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
    def registration_closed(self) -> bool:
        """Registration closes at the start; only for showing it: the registration's condition decides."""
        return self.starts_at <= utcnow()


class EventSeats(Model):
    """The seat counters of the same ``EVENT#<id>`` / ``METADATA`` item, without its version attribute.

    Registrations move the counters inside their transactions through this view: PynamoDB adds a version
    check and bump to every write of a versioned model, and a registration must neither bump the version
    (that would turn every open edit page stale) nor fail because an edit happened meanwhile.
    """

    class Meta(TableMeta):
        pass

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    capacity = NumberAttribute()
    registered_count = NumberAttribute(default=0)
    waitlist_count = NumberAttribute(default=0)
    waitlist_seq = NumberAttribute(null=True)  # absent on events created before the waitlist existed
    # Read by the registration's own condition: registration closes at the start (issue 11 item 6).
    starts_at = UTCDateTimeAttribute(null=True)

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.key_for(event_id)


CONFIRMED = "confirmed"
WAITLISTED = "waitlisted"
CANCELLED = "cancelled"


class RegistrationClaim(Model):
    """``EVENT#<event_id>`` / ``REGCLAIM#<user_id>``: the one item that makes "one registration per student" true.

    It is written with ``attribute_not_exists`` in the transaction that creates a registration and deleted in
    the one that cancels it, so it follows the registration's life (no TTL). It holds what a loser needs to
    answer "already registered" from the ALL_OLD image of its failed transaction, without another read.
    """

    class Meta(TableMeta):
        pass

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    entity = UnicodeAttribute(default="RegistrationClaim")
    registration_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    user_id = UnicodeAttribute()  # tems.identity.user_key: immutable, never a username
    user_name = UnicodeAttribute(null=True)  # the display name at registration (the API's "user")
    status = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    ticket = NumberAttribute(null=True)  # the waitlist ticket while waitlisted

    @classmethod
    def key_for(cls, event_id: str, user_id: str) -> tuple[str, str]:
        return Event.pk_for(event_id), f"REGCLAIM#{user_id}"


class Registration(Model):
    """One registration, stored twice: ``USER#<user_id>`` / ``REGISTRATION#<id>`` (the student's list) and
    ``EVENT#<event_id>`` / ``REGISTRATION#<id>`` (the event's list). Both copies are written, changed and
    deleted together in one transaction.
    """

    class Meta(TableMeta):
        pass

    SK_PREFIX = "REGISTRATION#"

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    entity = UnicodeAttribute(default="Registration")
    registration_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    user_id = UnicodeAttribute()  # tems.identity.user_key: immutable, never a username
    user_name = UnicodeAttribute(null=True)  # the display name at registration (the API's "user")
    status = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    ticket = NumberAttribute(null=True)
    promoted_at = UTCDateTimeAttribute(null=True)

    @staticmethod
    def user_pk_for(user_id: str) -> str:
        return f"USER#{user_id}"

    @classmethod
    def user_key_for(cls, user_id: str, registration_id: str) -> tuple[str, str]:
        return cls.user_pk_for(user_id), cls.SK_PREFIX + registration_id

    @classmethod
    def event_key_for(cls, event_id: str, registration_id: str) -> tuple[str, str]:
        return Event.pk_for(event_id), cls.SK_PREFIX + registration_id


class WaitlistEntry(Model):
    """``EVENT#<event_id>`` / ``WAITLIST#<ticket>``: one place in the event's FIFO waiting list.

    Tickets come from the event's ``waitlist_seq``: a join sets ``waitlist_seq = n + 1`` under the condition
    ``waitlist_seq = n`` in the same transaction that writes the entry, so tickets are unique and grow in commit
    order, and the head of the queue is simply the smallest ``WAITLIST#`` key (a strongly consistent Query with
    Limit 1). A position is never stored: it is the number of entries up to one's own ticket, counted on read,
    so a cancellation in the middle of the queue rewrites nothing.
    """

    class Meta(TableMeta):
        pass

    SK_PREFIX = "WAITLIST#"
    # Zero-padded so that string order is number order; 10 digits outlast any event's waiting list.
    TICKET_DIGITS = 10

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    entity = UnicodeAttribute(default="WaitlistEntry")
    registration_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    user_id = UnicodeAttribute()
    ticket = NumberAttribute()

    @classmethod
    def sk_for(cls, ticket: int) -> str:
        return f"{cls.SK_PREFIX}{ticket:0{cls.TICKET_DIGITS}d}"

    @classmethod
    def key_for(cls, event_id: str, ticket: int) -> tuple[str, str]:
        return Event.pk_for(event_id), cls.sk_for(ticket)


class EventCheckins(Model):
    """The door's counter on the same ``EVENT#<id>`` / ``METADATA`` item, without its version attribute.

    Like ``EventSeats``, a view that lets a check-in move its counter inside its transaction without bumping
    the event's version (an open edit page must not turn stale because the doors are busy).
    """

    class Meta(TableMeta):
        pass

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    registered_count = NumberAttribute(default=0)
    checked_in_count = NumberAttribute(null=True)  # absent until the first check-in

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.key_for(event_id)


class CheckIn(Model):
    """``EVENT#<event_id>`` / ``CHECKIN#<registration_id>``: the one item that makes "admitted once" true.

    Put with ``attribute_not_exists`` in the check-in's transaction, so of any number of doors scanning the same
    ticket exactly one writes it; every other door gets it back as the ALL_OLD image of its failed condition
    and answers with the first check-in's details, without a read. An undo deletes it.
    """

    class Meta(TableMeta):
        pass

    SK_PREFIX = "CHECKIN#"

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    entity = UnicodeAttribute(default="CheckIn")
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


class CheckInLogEntry(Model):
    """``EVENT#<event_id>`` / ``CHECKINLOG#<time>#<id>``: the door's history (check-ins and undos), never rewritten.

    Written in the same transaction as the change it records, so the history and the state cannot disagree.
    """

    class Meta(TableMeta):
        pass

    SK_PREFIX = "CHECKINLOG#"

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    entity = UnicodeAttribute(default="CheckInLogEntry")
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
