"""The transactional outbox: side effects leave DynamoDB only as messages written in the same transaction.

A change that must tell the outside world (send a confirmation e-mail, notify the promoted student, ...) adds an
``OutboxMessage`` to its own TransactWriteItems, so the message exists if and only if the change happened. 
``outbox_relay`` (run by ``manage.py relay_outbox``, and in the background by ``make run``) polls the ``OUTBOX``
collection in GSI1, claims each message with a conditional lease, hands it to the handler named for its type in
``settings.OUTBOX_HANDLERS`` and deletes it once handled. A handler that fails leaves the message for a later
pass once the lease runs out. Delivery is at least once (a relay that dies after the side effect but before the
delete leaves it to be redone after the lease), so handlers must tolerate a repeat of the same ``message_id``.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string
from pynamodb.attributes import NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.exceptions import DeleteError, UpdateError
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
    # Set by the relay that is delivering it: nobody else touches the message until the lease runs out.
    claimed_by = UnicodeAttribute(null=True)
    lease_until = UTCDateTimeAttribute(null=True)
    attempts = NumberAttribute(default=0)

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


logger = logging.getLogger(__name__)
CONDITION_FAILED = "ConditionalCheckFailedException"
# Longer than any handler should take (an SMTP round trip); short enough that a crashed relay's messages go out
# again within a minute.
LEASE = timedelta(seconds=60)

Handler = Callable[[OutboxMessage], None]


@dataclass
class RelayReport:
    delivered: int = 0
    failed: int = 0
    skipped: int = 0  # claimed by another relay, or of a type no handler is configured for


def outbox_pending(*, limit: int = 100) -> list[OutboxMessage]:
    """The oldest undelivered messages (the index is eventually consistent; a late one waits for the next pass)."""
    return list(OutboxMessage.pending.query(OutboxMessage.COLLECTION, limit=limit))


def configured_handlers() -> dict[str, Handler]:
    return {message_type: import_string(path) for message_type, path in settings.OUTBOX_HANDLERS.items()}


def outbox_relay(*, handlers: Mapping[str, Handler] | None = None, limit: int = 100, relay_id: str | None = None,
                 now: Callable[[], datetime] = utcnow) -> RelayReport:
    """One pass over the pending messages: claim, handle, delete. Returns what happened to each."""
    handlers = configured_handlers() if handlers is None else handlers
    relay_id = relay_id or uuid.uuid4().hex
    report = RelayReport()
    for message in outbox_pending(limit=limit):
        handler = handlers.get(message.message_type)
        if handler is None or not _claim(message, relay_id=relay_id, now=now()):
            report.skipped += 1
            continue
        try:
            handler(message)
        except Exception:  # noqa: BLE001 - one bad message must not stop the others; it is retried after its lease
            logger.exception("outbox message %s (%s) failed", message.message_id, message.message_type)
            report.failed += 1
            continue
        try:
            message.delete(condition=OutboxMessage.claimed_by == relay_id)
        except DeleteError as error:
            if error.cause_response_code != CONDITION_FAILED:
                raise
            # Our lease ran out and another relay took the message over: it will delete it.
        report.delivered += 1
    return report


def _claim(message: OutboxMessage, *, relay_id: str, now: datetime) -> bool:
    try:
        message.update(
            actions=[OutboxMessage.claimed_by.set(relay_id), OutboxMessage.lease_until.set(now + LEASE),
                     OutboxMessage.attempts.add(1)],
            condition=OutboxMessage.pk.exists()
            & (OutboxMessage.lease_until.does_not_exist() | (OutboxMessage.lease_until < now)),
        )
    except UpdateError as error:
        if error.cause_response_code != CONDITION_FAILED:
            raise
        return False  # delivered and deleted already, or another relay holds it
    return True
