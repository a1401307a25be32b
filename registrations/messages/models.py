"""A mail to an event's attendees (``EventMessage``), in the single table (see tems.dynamo)."""

from __future__ import annotations

import hashlib
from datetime import datetime

from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)

from registrations.events.models import Event
from tems.dynamo import CollectionIndex, TableModel
from tems.text import TextAttribute


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


class MessageCopy(TableModel):
    """``INBOX#<user_id>`` / ``EVENT#<event_id>#<when>#<message_id>``: that a message was addressed to a person.

    Written by the fan-out in the same transaction as the person's outbox mail (registrations.messages.services),
    so there is one exactly when their mail was queued, whether or not their address takes mail. The event page
    reads a person's copies of its messages with one Query of their partition, newest first; the words are on the
    message itself, read with one BatchGetItem, never copied per person.
    """

    PK_PREFIX = "INBOX#"

    user_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    message_id = UnicodeAttribute()
    registration_id = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()

    @classmethod
    def pk_for(cls, user_id: str) -> str:
        return cls.PK_PREFIX + user_id

    @staticmethod
    def event_prefix(event_id: str) -> str:
        return f"EVENT#{event_id}#"

    @classmethod
    def key_for(cls, user_id: str, event_id: str, message_id: str, created_at: datetime) -> tuple[str, str]:
        # The message's time in the key sorts a person's copies of an event's messages by when each was written.
        return cls.pk_for(user_id), cls.event_prefix(event_id) + Event.listing_key(created_at, message_id)
