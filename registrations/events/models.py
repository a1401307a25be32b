"""The event's item and its views (``Event``, ``EventSeats``, ``EventCancellation``), in the single table (see
tems.dynamo)."""

from __future__ import annotations

from datetime import UTC, datetime

from pynamodb.attributes import (
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)

from tems.clock import utcnow
from tems.dynamo import CollectionIndex, TableModel
from tems.text import TextAttribute

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
    """``EVENT#<event_id>`` / ``METADATA``: what staff edit (versioned) plus how its seats are sliced.

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
    # Seats taken and people waiting are not stored here: the shards and lanes hold them, and
    # ``registrations.seating.shards.seat_counts`` sums them on read.
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
    # Scratch events (the lab's, made for whoever opens it) have ids under this prefix, so no list of a person's
    # registrations shows them. A real event's id is a hex uuid or a seed's name, never under it.
    SCRATCH_PREFIX = "lab-"

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
