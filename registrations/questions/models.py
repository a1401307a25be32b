"""An event's custom questions (``EventQuestions``), in the single table (see tems.dynamo)."""

from __future__ import annotations

from pynamodb.attributes import (
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)

from registrations.events.models import Event
from tems.clock import utcnow
from tems.dynamo import TableModel
from tems.text import TextAttribute


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
