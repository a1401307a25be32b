"""The items of the privacy features, in the single table (see tems.dynamo)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pynamodb.attributes import NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute, VersionAttribute

from registrations.events.models import Event
from tems.clock import utcnow
from tems.dynamo import CollectionIndex, TableModel

# Where a registration keeps the answers to an event's own questions: an attribute of the registration's items
# (both copies, the claim and a waitlist entry carrying it). The retention job and the erase remove it by this
# name, whether or not a model declares it.
ANSWERS_ATTRIBUTE = "answers"
# The longest retention the form takes: ten years is longer than any rule asks answers to be kept.
MAX_RETENTION_DAYS = 3650


def _stamp(at: datetime) -> str:
    # ISO-8601 in UTC, fixed width: string order is time order.
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventRetention(TableModel):
    """``EVENT#<event_id>`` / ``RETENTION``: how long after the event its registrations' answers are kept.

    An item of its own rather than a field of ``Event``: it carries its own version (staff setting it never
    turns an open edit page of the event stale), and while answers are still to be erased it is listed in GSI1
    under ``RETENTION`` by the time they fall due, so the retention job reads exactly the events that are due.
    ``partition`` is the job's progress through the event's partitions; ``done_at`` is set, and the listing
    removed, once no answer of the event is left.
    """

    ITEM = "RETENTION"
    COLLECTION = "RETENTION"

    event_id = UnicodeAttribute()
    days = NumberAttribute()
    due_at = UTCDateTimeAttribute()
    done_at = UTCDateTimeAttribute(null=True)
    # How far the retention job got: the partitions before this one hold no answer any more, nor this one up to
    # ``last_key`` (JSON; absent: from its start).
    partition = NumberAttribute(default=0)
    last_key = UnicodeAttribute(null=True)
    updated_at = UTCDateTimeAttribute(default=utcnow)
    updated_by = UnicodeAttribute(default="")
    version = VersionAttribute()

    due = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", null=True)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK", null=True)

    @classmethod
    def key_for(cls, event_id: str) -> tuple[str, str]:
        return Event.pk_for(event_id), cls.ITEM

    @staticmethod
    def due_for(starts_at: datetime, days: int) -> datetime:
        return starts_at + timedelta(days=days)

    @staticmethod
    def listing_key(due_at: datetime, event_id: str) -> str:
        return f"{_stamp(due_at)}#{event_id}"


class Erasure(TableModel):
    """``ERASURE#<user_key>`` / ``ERASURE``: a person's erasure, from its request until nothing of them is left.

    Written before anything is erased and listed in GSI1 under ``ERASURES`` until it is finished, so an erasure
    interrupted halfway (a crash, a busy event) is found and finished by the relay's periodic job. It holds the
    account's database id (a number that names nobody once the account is gone) and the user key, which is
    random and, once the account's identity row is deleted, links to no one.
    """

    ITEM = "ERASURE"
    COLLECTION = "ERASURES"
    PK_PREFIX = "ERASURE#"

    user_id = UnicodeAttribute()
    account_id = NumberAttribute(null=True)
    requested_at = UTCDateTimeAttribute()
    done_at = UTCDateTimeAttribute(null=True)

    pending = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", null=True)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK", null=True)

    @classmethod
    def key_for(cls, user_id: str) -> tuple[str, str]:
        return cls.PK_PREFIX + user_id, cls.ITEM

    @staticmethod
    def listing_key(requested_at: datetime, user_id: str) -> str:
        return f"{_stamp(requested_at)}#{user_id}"
