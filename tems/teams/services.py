"""Writes of teams: a platform admin creates a team and names its admins; a team admin manages members, roles and
which door volunteer works which event. Every refusal is a DomainError that names the field."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from tems import telemetry
from tems.audit import Actor
from tems.audit.wording import (
    APPROVAL_CHANGED,
    DOORS_ASSIGNED,
    MEMBER_ADDED,
    MEMBER_REMOVED,
    MEMBER_ROLE_CHANGED,
    RETENTION_CHANGED,
)
from tems.clock import utcnow
from tems.errors import DomainError
from tems.identity import user_key
from tems.models import DoorAssignment, Membership, Team, TeamAuditEntry
from tems.permissions import DOOR_VOLUNTEER, ROLES, TEAM_ADMIN


def _audit(actor: Actor | None, *, team_id: str, action: str, subject: str = "", event_id: str = "",
           before: dict[str, Any] | None = None, after: dict[str, Any] | None = None) -> None:
    """The change's one row of the team's log; called inside the change's database transaction, so both are
    saved or neither. ``actor`` None: nobody's hand (a command, a test of the rule itself)."""
    if actor is None:
        return
    TeamAuditEntry.objects.create(team_id=team_id, at=utcnow(), actor=actor.user_id, role=actor.role_in(team_id),
                                  action=action, subject=subject, event_id=event_id,
                                  before_json=json.dumps(before) if before is not None else "",
                                  after_json=json.dumps(after) if after is not None else "",
                                  request_id=telemetry.current_request_id() or "")


def _users(usernames: list[str], *, field: str) -> list:
    users = {user.get_username(): user for user in get_user_model().objects.filter(username__in=usernames)}
    missing = [name for name in usernames if name not in users]
    if missing:
        raise DomainError("invalid", f"No account is called {', '.join(missing)}.",
                          errors={field: [f"No account is called {name}." for name in missing]})
    return [users[name] for name in usernames]


def team_create(*, team_id: str, name: str, admin_usernames: list[str]) -> Team:
    """Create a team with its admins. Raises DomainError('invalid') for a taken id or name or an unknown
    username; nothing is written then."""
    admins = _users(admin_usernames, field="admins")
    if not admins:
        raise DomainError("invalid", "Name at least one team admin.", errors={"admins": ["Name at least one."]})
    try:
        with transaction.atomic():
            team = Team.objects.create(id=team_id, name=name)
            Membership.objects.bulk_create([Membership(user=user, team=team, role=TEAM_ADMIN) for user in admins])
    except IntegrityError:
        taken = "id" if Team.objects.filter(pk=team_id).exists() else "name"
        raise DomainError("invalid", f"Another team has this {taken}.",
                          errors={taken: [f"Another team has this {taken}."]}) from None
    return team


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise DomainError("invalid", "Choose one of the roles listed.", errors={"role": ["Not a role."]})


def member_add(*, team_id: str, username: str, role: str, actor: Actor | None = None) -> Membership:
    _check_role(role)
    (user,) = _users([username], field="username")
    try:
        with transaction.atomic():
            membership = Membership.objects.create(user=user, team_id=team_id, role=role)
            _audit(actor, team_id=team_id, action=MEMBER_ADDED, subject=user_key(user), after={"role": role})
            return membership
    except IntegrityError:
        raise DomainError("invalid", f"{username} is already in this team: change their role instead.",
                          errors={"username": ["Already in this team."]}) from None


def _keep_an_admin(team_id: str, membership: Membership) -> None:
    # Checked inside the write's transaction: two admins demoting each other at once leave one of them.
    if membership.role == TEAM_ADMIN and not Membership.objects.select_for_update().filter(
            team_id=team_id, role=TEAM_ADMIN).exclude(pk=membership.pk).exists():
        raise DomainError("conflict", "A team keeps at least one team admin: name another first.")


def member_role_set(*, team_id: str, membership_id: int, role: str, actor: Actor | None = None) -> Membership:
    _check_role(role)
    with transaction.atomic():
        membership = _membership(team_id, membership_id)
        if membership.role != role:
            _audit(actor, team_id=team_id, action=MEMBER_ROLE_CHANGED, subject=user_key(membership.user),
                   before={"role": membership.role}, after={"role": role})
        if role != TEAM_ADMIN:
            _keep_an_admin(team_id, membership)
        if membership.role == DOOR_VOLUNTEER and role != DOOR_VOLUNTEER:
            membership.doors.all().delete()
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def member_remove(*, team_id: str, membership_id: int, actor: Actor | None = None) -> None:
    with transaction.atomic():
        membership = _membership(team_id, membership_id)
        _keep_an_admin(team_id, membership)
        _audit(actor, team_id=team_id, action=MEMBER_REMOVED, subject=user_key(membership.user),
               before={"role": membership.role})
        membership.delete()


def _membership(team_id: str, membership_id: int) -> Membership:
    try:
        return Membership.objects.select_for_update().select_related("user").get(pk=membership_id, team_id=team_id)
    except Membership.DoesNotExist:
        raise DomainError("not_found", "That person is not in this team.") from None


def doors_set(*, team_id: str, event_id: str, membership_ids: set[int], actor: Actor | None = None) -> None:
    """Assign exactly these door volunteers of the team to the event (the others are unassigned)."""
    with transaction.atomic():
        volunteers = set(Membership.objects.filter(team_id=team_id, role=DOOR_VOLUNTEER, pk__in=membership_ids)
                         .values_list("pk", flat=True))
        if volunteers != membership_ids:
            raise DomainError("invalid", "Choose among the team's door volunteers.",
                              errors={"volunteers": ["Not a door volunteer of this team."]})
        before = set(DoorAssignment.objects.filter(membership__team_id=team_id, event_id=event_id)
                     .values_list("membership_id", flat=True))
        if before != volunteers:
            keys = dict(Membership.objects.filter(pk__in=before | volunteers)
                        .values_list("pk", "user__tems_identity__key"))
            _audit(actor, team_id=team_id, action=DOORS_ASSIGNED, event_id=event_id,
                   before={"volunteers": sorted(str(keys[pk]) for pk in before if keys.get(pk))},
                   after={"volunteers": sorted(str(keys[pk]) for pk in volunteers if keys.get(pk))})
        DoorAssignment.objects.filter(membership__team_id=team_id, event_id=event_id).exclude(
            membership_id__in=volunteers).delete()
        for membership_id in volunteers:
            DoorAssignment.objects.get_or_create(membership_id=membership_id, event_id=event_id)


def team_approval_set(*, team_id: str, needs_approval: bool, overseen_by: str | None,
                      actor: Actor | None = None) -> Team:
    """Set whether the team's new events need approval, and which team approves them (a platform admin's
    setting). Raises DomainError('invalid') naming the field: approval without an overseeing team, an unknown
    team, the team itself, or a team that the team itself oversees (two teams waiting on each other)."""
    overseen_by = overseen_by or None
    problem = None
    if needs_approval and overseen_by is None:
        problem = "Choose the team that approves this team's events."
    elif overseen_by == team_id:
        problem = "A team cannot approve its own events: choose another team."
    if problem:
        raise DomainError("invalid", problem, errors={"overseen_by": [problem]})
    with transaction.atomic():
        team = _team_for_update(team_id)
        if overseen_by is not None:
            overseer = Team.objects.select_for_update().filter(pk=overseen_by).first()
            if overseer is None:
                raise DomainError("invalid", "There is no such team.", errors={"overseen_by": ["No such team."]})
            if overseer.overseen_by_id == team_id:
                problem = f"{overseer.name} is overseen by this team: two teams cannot approve each other."
                raise DomainError("invalid", problem, errors={"overseen_by": [problem]})
        before = {"needs_approval": team.needs_approval, "overseen_by": team.overseen_by_id}
        after = {"needs_approval": needs_approval, "overseen_by": overseen_by}
        if before != after:
            _audit(actor, team_id=team_id, action=APPROVAL_CHANGED, before=before, after=after)
        team.needs_approval = needs_approval
        team.overseen_by_id = overseen_by
        team.save(update_fields=["needs_approval", "overseen_by"])
    return team


def _team_for_update(team_id: str) -> Team:
    try:
        return Team.objects.select_for_update().get(pk=team_id)
    except Team.DoesNotExist:
        raise DomainError("not_found", "There is no such team.") from None


def team_retention_set(*, team_id: str, days: int, actor: Actor | None = None) -> Team:
    """Set how long the team's audit log keeps an entry (entries written from now on). Raises DomainError('invalid')
    outside the allowed range, naming the field."""
    low, high = settings.TEMS_AUDIT_RETENTION_MIN_DAYS, settings.TEMS_AUDIT_RETENTION_MAX_DAYS
    if not isinstance(days, int) or isinstance(days, bool) or not low <= days <= high:
        problem = f"Keep entries between {low} and {high} days."
        raise DomainError("invalid", problem, errors={"days": [problem]})
    with transaction.atomic():
        team = Team.objects.select_for_update().get(pk=team_id)
        if team.audit_retention_days != days:
            _audit(actor, team_id=team_id, action=RETENTION_CHANGED, before={"days": team.audit_retention_days},
                   after={"days": days})
            team.audit_retention_days = days
            team.save(update_fields=["audit_retention_days"])
    return team


def team_audit_sweep(*, now: datetime | None = None) -> int:
    """Delete the rows of each team's own log older than the team's retention (the relay's periodic job); returns
    how many. One DELETE per team with rows past it: the log's DynamoDB entries go by their TTL instead."""
    now = now or utcnow()
    deleted = 0
    for team_id, days in Team.objects.values_list("pk", "audit_retention_days"):
        deleted += TeamAuditEntry.objects.filter(team_id=team_id, at__lt=now - timedelta(days=days)).delete()[0]
    return deleted
