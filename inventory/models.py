"""PynamoDB models of the inventory app, all in the single table (see tems.dynamo).

An item and its history share one partition, ``ITEM#<sku>``: the item is ``METADATA`` and each change is
``CHANGE#<zero-padded version>``, so "the history of this item, newest first" is one Query and the
transaction that writes a change touches one partition.
"""

from __future__ import annotations

from pynamodb.attributes import MapAttribute, NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute, VersionAttribute

from tems.clock import utcnow
from tems.dynamo import CollectionIndex, TableModel
from tems.text import TextAttribute, displayable

# Ten digits sort correctly as strings up to version 9,999,999,999: decades of edits at any plausible rate.
VERSION_DIGITS = 10

# The fields a person edits and a history entry snapshots (before and after).
TRACKED_FIELDS = ("name", "description", "quantity", "location")


class InventoryItem(TableModel):
    """``ITEM#<sku>`` / ``METADATA``: one stock item. Every write bumps ``version`` in the same request."""

    METADATA = "METADATA"
    COLLECTION = "INVENTORY"

    sku = UnicodeAttribute()
    # What people typed: shown on every page, so read through TextAttribute (see tems.text).
    name = TextAttribute()
    description = TextAttribute(default="")
    quantity = NumberAttribute(default=0)
    location = TextAttribute(default="")
    created_at = UTCDateTimeAttribute(default=utcnow)
    created_by = UnicodeAttribute(default="")
    updated_at = UTCDateTimeAttribute(default=utcnow)
    updated_by = UnicodeAttribute(default="")
    version = VersionAttribute()
    # The keeping team's id (tems.models.Team), set at creation; absent: only platform admins (tems.permissions).
    team = UnicodeAttribute(null=True)

    by_sku = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", default=COLLECTION)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK")

    @staticmethod
    def pk_for(sku: str) -> str:
        return f"ITEM#{sku}"

    @classmethod
    def key_for(cls, sku: str) -> tuple[str, str]:
        return cls.pk_for(sku), cls.METADATA

    def snapshot(self) -> dict:
        """The tracked fields as plain values, the shape stored in history as before/after."""
        return {
            "name": self.name,
            "description": self.description,
            "quantity": int(self.quantity),
            "location": self.location,
        }


class InventoryChange(TableModel):
    """``ITEM#<sku>`` / ``CHANGE#<version>``: who changed what, written in the same transaction as the change."""

    PREFIX = "CHANGE#"
    CREATE = "create"
    EDIT = "edit"
    ADJUST = "adjust"
    IMPORT = "import"
    LAST_SK = PREFIX + "9" * VERSION_DIGITS

    sku = UnicodeAttribute()
    version = NumberAttribute()
    kind = UnicodeAttribute()
    changed_by = UnicodeAttribute()
    changed_at = UTCDateTimeAttribute(default=utcnow)
    reason = TextAttribute(default="")
    # Adjustments only: the relative change that was asked for.
    delta = NumberAttribute(null=True)
    # Raw maps of TRACKED_FIELDS; ``before`` is absent for the creating change.
    before = MapAttribute(null=True)
    after = MapAttribute()

    @staticmethod
    def sk_for(version: int) -> str:
        return f"{InventoryChange.PREFIX}{int(version):0{VERSION_DIGITS}d}"

    @classmethod
    def key_for(cls, sku: str, version: int) -> tuple[str, str]:
        return InventoryItem.pk_for(sku), cls.sk_for(version)

    @property
    def before_values(self) -> dict:
        return _plain(self.before)

    @property
    def after_values(self) -> dict:
        return _plain(self.after)

    @property
    def changed_fields(self) -> list[tuple[str, object, object]]:
        """(field, before, after) for each tracked field this change altered, in form order."""
        before, after = self.before_values, self.after_values
        return [(name, before.get(name), after.get(name)) for name in TRACKED_FIELDS
                if before.get(name) != after.get(name)]


class OperationMetrics(TableModel):
    """``METRICS#inventory`` / ``OP#<operation>``: running totals, moved only by atomic ADDs.

    They live in the table rather than in process memory so they survive restarts and add up across every app
    server; ADD needs no read and no condition, so concurrent recorders never conflict or lose a count.
    """

    PK = "METRICS#inventory"

    operation = UnicodeAttribute(null=True)
    calls = NumberAttribute(default=0)
    succeeded = NumberAttribute(default=0)
    refused = NumberAttribute(default=0)
    condition_failures = NumberAttribute(default=0)
    transaction_conflicts = NumberAttribute(default=0)
    retries = NumberAttribute(default=0)
    exhausted = NumberAttribute(default=0)
    replays = NumberAttribute(default=0)
    requests = NumberAttribute(default=0)
    write_capacity = NumberAttribute(default=0)
    read_capacity = NumberAttribute(default=0)
    updated_at = UTCDateTimeAttribute(null=True)

    @classmethod
    def key_for(cls, operation: str) -> tuple[str, str]:
        return cls.PK, f"OP#{operation}"

    @property
    def conflict_rate(self) -> float:
        """Percent of write attempts that lost a race and had to go again (attempts = calls + retries).

        Condition failures alone would mix races with business refusals (a sale larger than the stock).
        """
        attempts = int(self.calls) + int(self.retries)
        return 100.0 * int(self.retries) / attempts if attempts else 0.0

    @property
    def requests_per_call(self) -> float:
        return int(self.requests) / int(self.calls) if self.calls else 0.0

    @property
    def wcu_per_call(self) -> float:
        return float(self.write_capacity) / int(self.calls) if self.calls else 0.0


def _plain(value) -> dict:
    if value is None:
        return {}
    raw = value.as_dict() if hasattr(value, "as_dict") else dict(value)
    # DynamoDB numbers come back as Decimal; quantity is the only number we keep. Text as TextAttribute reads it.
    return {k: int(v) if k == "quantity" and v is not None else displayable(v) if isinstance(v, str) else v
            for k, v in raw.items()}
