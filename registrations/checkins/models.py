"""The door's items (``EventCheckins``, ``CheckIn``, ``CheckInLogEntry``), in the single table (see tems.dynamo)."""

from __future__ import annotations

from datetime import UTC, datetime

from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)

from registrations.events.models import Event
from tems.dynamo import TableModel


class EventCheckins(TableModel):
    """The door's counter on the same ``EVENT#<id>`` / ``METADATA`` item, without its version attribute.

    Like ``EventSeats``, a view that lets a check-in move its counter inside its transaction without bumping
    the event's version (an open edit page must not turn stale because the doors are busy).
    """

    ENTITY = None  # a view of another model's item: writes no entity
    capacity = NumberAttribute(null=True)  # with ``seat_shards``, what ``shards.seat_counts`` reads
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
