"""Outbox consumers of the door's messages.

Nothing is mailed on a check-in; the messages are there for any consumer that wants them (a badge printer, an
attendance export). These log one line each, which is idempotent: a repeated delivery of the same
``message_id`` logs the same line again and changes nothing.
"""

import logging

from tems.outbox import OutboxMessage

logger = logging.getLogger(__name__)


def checkin_recorded(message: OutboxMessage) -> None:
    data = message.data
    logger.info("check-in %s: registration %s of %s at door %r by %s at %s", message.message_id,
                data["registration_id"], data["user"], data["door"], data["checked_in_by"], data["checked_in_at"])


def checkin_undone(message: OutboxMessage) -> None:
    data = message.data
    logger.info("check-in undone %s: registration %s by %s at %s", message.message_id, data["registration_id"],
                data["undone_by"], data["undone_at"])
