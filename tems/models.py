"""``UserIdentity`` is the one Django model of ``tems``. The shared table models live in their own modules;
importing them here registers them with Django's start-up.

``tems.dynamo.configure_models`` also configures ``TableMeta`` itself, so a model imported later still inherits
the configuration; this import only makes start-up order not matter for the ones we know of.
"""

from tems.identity import UserIdentity
from tems.idempotency import IdempotencyRecord
from tems.lab import LabRun, LabSlot
from tems.outbox import OutboxMessage
from tems.ratelimit import WriteRateCounter

__all__ = ["IdempotencyRecord", "LabRun", "LabSlot", "OutboxMessage", "UserIdentity", "WriteRateCounter"]
