"""The transactional outbox: side effects leave DynamoDB only as messages written in the same transaction.

A change that must tell the outside world (send a confirmation e-mail, notify the promoted student, ...) adds an
``OutboxMessage`` to its own TransactWriteItems, so the message exists if and only if the change happened. A
relay (DynamoDB Streams, or a poller over the ``OUTBOX`` collection in GSI1) delivers and then deletes each one;
delivery is at least once, so consumers deduplicate by ``message_id``.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from pynamodb.attributes import UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.models import Model

from tems.clock import utcnow
from tems.dynamo import CollectionIndex, TableMeta


class OutboxMessage(Model):
    """``OUTBOX#<message_id>`` / ``MESSAGE``, listed oldest first in GSI1 under ``OUTBOX``."""

    class Meta(TableMeta):
        pass

    SK = "MESSAGE"
    COLLECTION = "OUTBOX"

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK", default=SK)
    entity = UnicodeAttribute(default="OutboxMessage")
    message_id = UnicodeAttribute()
    message_type = UnicodeAttribute()
    payload = UnicodeAttribute()  # JSON, so a relay needs no knowledge of the producing app's models
    created_at = UTCDateTimeAttribute(default=utcnow)

    pending = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", default=COLLECTION)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK")

    @classmethod
    def key_for(cls, message_id: str) -> tuple[str, str]:
        return f"OUTBOX#{message_id}", cls.SK

    @staticmethod
    def listing_key(created_at: datetime, message_id: str) -> str:
        return f"{created_at.isoformat()}#{message_id}"

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.payload)


def outbox_message(*, message_type: str, payload: dict[str, Any], now: datetime | None = None) -> OutboxMessage:
    """A new message, to be saved inside the transaction whose change it announces."""
    now = now or utcnow()
    message_id = uuid.uuid4().hex
    return OutboxMessage(
        *OutboxMessage.key_for(message_id),
        message_id=message_id, message_type=message_type,
        payload=json.dumps(payload, sort_keys=True, default=str),
        created_at=now, gsi1sk=OutboxMessage.listing_key(now, message_id),
    )
