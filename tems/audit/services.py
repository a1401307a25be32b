"""Writes of the audit log: an entry inside a change's transaction, an entry for a read of personal data, and the
pseudonymisation of an erased person's entries."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from tems import telemetry
from tems.audit.actors import Actor
from tems.audit.models import AuditEntry
from tems.clock import utcnow
from tems.transactions import LabelledTransaction

# The entry's label in the transaction of the change it records.
AUDIT = "audit"


def _plain(value: Any) -> Any:
    """A value as JSON holds it: times as ISO 8601 in UTC (a form's local time and the stored UTC one are the same
    instant, not a change), DynamoDB's numbers as numbers."""
    if isinstance(value, datetime):
        return (value.astimezone(UTC) if value.tzinfo else value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Mapping):
        return {str(name): _plain(item) for name, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(item) for item in value]
    return value


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Only the fields whose value differs, before and after (as JSON holds them)."""
    old, new = _plain(dict(before)), _plain(dict(after))
    names = [name for name in new if old.get(name) != new.get(name)]
    return {name: old.get(name) for name in names}, {name: new[name] for name in names}


def new_entry(*, actor: Actor, action: str, team: str | None, event_id: str | None = None, sku: str | None = None,
              subject: str | None = None, before: Mapping[str, Any] | None = None,
              after: Mapping[str, Any] | None = None, idempotency_key: str | None = None,
              now: datetime | None = None) -> AuditEntry:
    at = now or utcnow()
    entry_id = uuid.uuid4().hex
    return AuditEntry(
        *AuditEntry.key_for(event_id=event_id, sku=sku, team=team, at=at, entry_id=entry_id),
        entry_id=entry_id, at=at, actor=actor.user_id, role=actor.role_in(team), team=team, action=action,
        event_id=event_id, sku=sku, subject=subject,
        before=_plain(dict(before)) if before is not None else None,
        after=_plain(dict(after)) if after is not None else None,
        idempotency_key=idempotency_key or None, request_id=telemetry.current_request_id(),
        expires_at=at + timedelta(days=actor.retention_days(team)),
        **AuditEntry.team_index_fields(team, at, entry_id),
    )


def add_entry(transaction: LabelledTransaction, *, actor: Actor | None, action: str, team: str | None,
              event_id: str | None = None, sku: str | None = None, subject: str | None = None,
              before: Mapping[str, Any] | None = None, after: Mapping[str, Any] | None = None,
              idempotency_key: str | None = None, now: datetime | None = None, label: str = AUDIT) -> None:
    """Add the change's one audit entry to ``transaction`` (labelled ``label``): written if and only if the change
    is. ``actor`` None is a change nobody made by hand (the demo's seeding, the lab): no entry. A transaction
    that changes several objects at once (a stock count's rows) adds one entry per object, each labelled apart.

    ``before``/``after``: the fields the change altered (``changed_fields``), never a person's name: who is
    recorded by key (``actor``, ``subject``) and named when the log is read.
    """
    if actor is None:
        return
    entry = new_entry(actor=actor, action=action, team=team, event_id=event_id, sku=sku, subject=subject,
                      before=before, after=after, idempotency_key=idempotency_key, now=now)
    transaction.save(label, entry, condition=AuditEntry.pk.does_not_exist())


def record_read(*, actor: Actor, action: str, team: str | None, event_id: str | None = None,
                after: Mapping[str, Any] | None = None, now: datetime | None = None) -> None:
    """One entry for one request that showed personal data (an attendee list, its CSV): one PutItem."""
    entry = new_entry(actor=actor, action=action, team=team, event_id=event_id, after=after, now=now)
    entry.save(condition=AuditEntry.pk.does_not_exist())


def audit_pseudonymise(*, user_id: str, pseudonym: str) -> int:
    """Replace an erased person's key by ``pseudonym`` wherever the log holds it (as the one acting or the one
    acted on); returns how many entries changed.

    Entries are keyed by object, not by person, so a filtered Scan finds them (erasures are rare; the erasure
    scans the table once already). Each update is conditioned on the value read: safe to run again.
    """
    from tems.models import TeamAuditEntry

    changed = TeamAuditEntry.objects.filter(actor=user_id).update(actor=pseudonym)
    changed += TeamAuditEntry.objects.filter(subject=user_id).update(subject=pseudonym)
    mentions = (AuditEntry.actor == user_id) | (AuditEntry.subject == user_id)
    for entry in AuditEntry.scan(filter_condition=AuditEntry.pk.startswith(AuditEntry.PREFIX) & mentions,
                                 consistent_read=True):
        actions, condition = [], AuditEntry.pk.exists()
        if entry.actor == user_id:
            actions.append(AuditEntry.actor.set(pseudonym))
            condition &= AuditEntry.actor == user_id
        if entry.subject == user_id:
            actions.append(AuditEntry.subject.set(pseudonym))
            condition &= AuditEntry.subject == user_id
        AuditEntry(entry.pk, entry.sk).update(actions=actions, condition=condition)
        changed += 1
    return changed
