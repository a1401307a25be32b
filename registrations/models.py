"""PynamoDB models of the registrations app, all in the single table (see tems.dynamo)."""

from __future__ import annotations

from datetime import UTC, datetime

from pynamodb.attributes import NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute, VersionAttribute
from pynamodb.models import Model

from tems.clock import utcnow
from tems.dynamo import CollectionIndex, TableMeta


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
    title = UnicodeAttribute()
    description = UnicodeAttribute(default="")
    location = UnicodeAttribute(default="")
    starts_at = UTCDateTimeAttribute()
    capacity = NumberAttribute()
    registered_count = NumberAttribute(default=0)
    waitlist_count = NumberAttribute(default=0)
    created_at = UTCDateTimeAttribute(default=utcnow)
    created_by = UnicodeAttribute(default="")
    updated_at = UTCDateTimeAttribute(default=utcnow)
    updated_by = UnicodeAttribute(default="")
    version = VersionAttribute()

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

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.key_for(event_id)
