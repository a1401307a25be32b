"""Reads of the audit log: an event's log and a team's log, one Query a page (newest first), and the rows as
pages show them (names read when shown, never stored)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Paginator

from tems.audit.models import AuditEntry
from tems.audit.wording import (
    ACTIONS,
    APPROVAL_CHANGED,
    DOORS_ASSIGNED,
    MEMBER_ADDED,
    MEMBER_REMOVED,
    MEMBER_ROLE_CHANGED,
    RETENTION_CHANGED,
    ROLE_WORDS,
    describe,
)
from tems.errors import DomainError
from tems.identity import UserIdentity, display_names_for_keys
from tems.pagination import Page, query_filtered_page, query_page

# An erased person's pseudonym (registrations.privacy: "erased-" and eight hex digits).
PSEUDONYM = re.compile(r"^erased-[0-9a-f]{8}$")
TEAM_CHANGES_PER_PAGE = 20
# The actions of the team's own log (Django's database).
TEAM_ACTIONS = frozenset({MEMBER_ADDED, MEMBER_ROLE_CHANGED, MEMBER_REMOVED, DOORS_ASSIGNED, RETENTION_CHANGED,
                          APPROVAL_CHANGED})


def checked_filters(*, actor: str | None, action: str | None) -> tuple[str | None, str | None]:
    """The log's filters as asked (empty: not filtered), or DomainError('invalid') naming the field."""
    actor, action = (actor or "").strip() or None, (action or "").strip() or None
    if action is not None and action not in ACTIONS:
        raise DomainError("invalid", "Choose an action from the list.", errors={"action": ["Not an action."]})
    if actor is not None and not PSEUDONYM.match(actor):
        try:
            actor = str(uuid.UUID(actor))
        except ValueError:
            raise DomainError("invalid", "Choose a person from the list.",
                              errors={"actor": ["Not a person."]}) from None
    return actor, action


def _filter(actor: str | None, action: str | None):
    condition = None
    for wanted in ((AuditEntry.actor == actor) if actor else None, (AuditEntry.action == action) if action else None):
        if wanted is not None:
            condition = wanted if condition is None else condition & wanted
    return condition


def _page(query, key: str, *, scope: str, actor: str | None, action: str | None, cursor: str | None,
          limit: int) -> Page[AuditEntry]:
    actor, action = checked_filters(actor=actor, action=action)
    # The filters are part of the cursor's scope: a cursor of one filtered view is refused by another.
    scope = f"{scope}:{actor or ''}:{action or ''}"
    condition = _filter(actor, action)
    if condition is None:
        return query_page(query, key, scope=scope, cursor=cursor, limit=limit, scan_index_forward=False)
    # A filter, not a key condition: the log is keyed by time. One request reads ``limit`` entries and the page
    # holds those that match (maybe none), so a rare action never costs a long walk in one request.
    return query_filtered_page(query, key, model=AuditEntry, scope=scope, cursor=cursor, limit=limit,
                               filter_condition=condition, scan_index_forward=False)


def event_log(*, event_id: str, actor: str | None = None, action: str | None = None, cursor: str | None,
              limit: int) -> Page[AuditEntry]:
    """A page of ``event_id``'s log, newest first: one Query."""
    return _page(AuditEntry.query, AuditEntry.pk_for_event(event_id), scope=f"audit:event:{event_id}",
                 actor=actor, action=action, cursor=cursor, limit=limit)


def team_log(*, team_id: str, actor: str | None = None, action: str | None = None, cursor: str | None,
             limit: int) -> Page[AuditEntry]:
    """A page of the log of the team's events and stock, newest first: one Query of GSI1."""
    return _page(AuditEntry.by_team.query, AuditEntry.team_pk_for(team_id), scope=f"audit:team:{team_id}",
                 actor=actor, action=action, cursor=cursor, limit=limit)


def team_changes(*, team_id: str, actor: str | None = None, action: str | None = None, page: str | None = None):
    """A page of the log of the team itself (members, roles, doors, retention): Django's database."""
    from tems.models import TeamAuditEntry

    actor, action = checked_filters(actor=actor, action=action)
    rows = TeamAuditEntry.objects.filter(team_id=team_id)
    if actor:
        rows = rows.filter(actor=actor)
    if action:
        rows = rows.filter(action=action)
    return Paginator(rows, TEAM_CHANGES_PER_PAGE).get_page(page)


@dataclass(frozen=True)
class LogRow:
    at: datetime
    who: str
    role: str
    what: str
    event_id: str | None
    sku: str | None


def log_rows(entries: Iterable) -> list[LogRow]:
    """Entries (DynamoDB's or Django's) as the log's pages show them: who by name, what in words."""
    entries = list(entries)
    names = display_names_for_keys(key for entry in entries for key in (entry.actor, entry.subject) if key)

    def name(key: str) -> str:
        if key in names:
            return names[key]
        return "a former member" if not PSEUDONYM.match(key or "") else f"a former member ({key})"

    return [LogRow(at=entry.at, who=name(entry.actor), role=ROLE_WORDS.get(entry.role, entry.role or ""),
                   what=describe(entry, name), event_id=getattr(entry, "event_id", None) or None,
                   sku=getattr(entry, "sku", None)) for entry in entries]


def people_of_team(team: str | None) -> list[tuple[str, str]]:
    """(key, name) of the team's members, by name: the actor filter's choices."""
    if not team:
        return []
    keys = UserIdentity.objects.filter(user__team_memberships__team_id=team).values_list("key", flat=True)
    names = display_names_for_keys(str(key) for key in keys)
    return sorted(names.items(), key=lambda pair: pair[1].lower())


def filter_people(entries: Iterable, *, team: str | None) -> list[tuple[str, str]]:
    """The actor filter's choices: the team's members, and whoever else acted on this page (a platform admin,
    a former member) while their account lasts."""
    people = dict(people_of_team(team))
    others = {entry.actor for entry in entries} - set(people)
    people.update(display_names_for_keys(others))
    return sorted(people.items(), key=lambda pair: pair[1].lower())


__all__ = ["TEAM_ACTIONS", "LogRow", "checked_filters", "event_log", "filter_people",
           "log_rows", "people_of_team", "team_changes", "team_log"]
