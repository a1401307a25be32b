"""``AuditEntry``: one item per entry of the audit log, in the single table (see tems.dynamo).

``AUDIT#<object>`` / ``<time>#<id>``: an event's entries share a partition (``/events/<id>/log/`` is one Query,
newest first), an inventory item's another; the team's log is GSI1 under ``AUDIT#TEAM#<team>`` (one Query).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pynamodb.attributes import JSONAttribute, TTLAttribute, UnicodeAttribute, UTCDateTimeAttribute

from tems.dynamo import CollectionIndex, TableModel


def _stamp(at: datetime, entry_id: str) -> str:
    # ISO-8601 in UTC sorts chronologically as a string; the id keeps two entries of one instant apart.
    return f"{at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#{entry_id}"


class AuditEntry(TableModel):
    """Who (``actor``: a user key, or an erased person's pseudonym; ``role`` and ``team`` as they were), what
    (``action``; ``before``/``after``: only the fields it changed), about what (``event_id`` or ``sku``, and
    ``subject``: the user key of the person acted on), under which tap (``idempotency_key``) and request."""

    PREFIX = "AUDIT#"
    EVENT = "EVENT#"
    ITEM = "ITEM#"
    TEAM = "TEAM#"

    entry_id = UnicodeAttribute()
    at = UTCDateTimeAttribute()
    actor = UnicodeAttribute()
    role = UnicodeAttribute(default="")
    team = UnicodeAttribute(null=True)
    action = UnicodeAttribute()
    event_id = UnicodeAttribute(null=True)
    sku = UnicodeAttribute(null=True)
    subject = UnicodeAttribute(null=True)
    before = JSONAttribute(null=True)
    after = JSONAttribute(null=True)
    idempotency_key = UnicodeAttribute(null=True)
    request_id = UnicodeAttribute(null=True)
    # DynamoDB's TTL deletes the entry after its team's retention (tems.models.Team.audit_retention_days).
    expires_at = TTLAttribute(null=True)

    by_team = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", null=True)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK", null=True)

    @classmethod
    def pk_for_event(cls, event_id: str) -> str:
        return f"{cls.PREFIX}{cls.EVENT}{event_id}"

    @classmethod
    def pk_for_item(cls, sku: str) -> str:
        return f"{cls.PREFIX}{cls.ITEM}{sku}"

    @classmethod
    def team_pk_for(cls, team: str) -> str:
        return f"{cls.PREFIX}{cls.TEAM}{team}"

    @classmethod
    def key_for(cls, *, event_id: str | None, sku: str | None, team: str | None, at: datetime,
                entry_id: str) -> tuple[str, str]:
        """The entry's key: under its event, else its item, else its team (a change of the team itself)."""
        if event_id:
            pk = cls.pk_for_event(event_id)
        elif sku:
            pk = cls.pk_for_item(sku)
        elif team:
            pk = cls.team_pk_for(team)
        else:
            raise ValueError("an audit entry is about an event, an item or a team")
        return pk, _stamp(at, entry_id)

    @classmethod
    def team_index_fields(cls, team: str | None, at: datetime, entry_id: str) -> dict[str, str]:
        """GSI1's keys for the team's log; none for an object without a team (only platform admins act on it,
        and its own log shows it)."""
        if not team:
            return {}
        return {"gsi1pk": cls.team_pk_for(team), "gsi1sk": _stamp(at, entry_id)}
