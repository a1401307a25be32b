"""Django imports each app's ``models`` module at start-up; importing the shared table models here makes sure
``tems.dynamo.configure_models`` sees them before any code uses them (it only re-points imported classes)."""

from tems.idempotency import IdempotencyRecord
from tems.outbox import OutboxMessage

__all__ = ["IdempotencyRecord", "OutboxMessage"]
