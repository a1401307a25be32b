"""Reads of teams and their members (Django's database)."""

from __future__ import annotations

from collections.abc import Iterable

from tems.models import DoorAssignment, Membership, Team
from tems.permissions import DOOR_VOLUNTEER, ROLES, NoSuchObject, Permission, access_of


def team_of(team_id: str) -> str:
    """The team itself is its own scope (tems.permissions); raises NoSuchObject for an unknown id."""
    if not Team.objects.filter(pk=team_id).exists():
        raise NoSuchObject(team_id)
    return team_id


def team_get(*, team_id: str) -> Team:
    return Team.objects.get(pk=team_id)


def team_names(team_ids: Iterable[str | None]) -> dict[str, str]:
    """{team id: name} for the ids given (one query; none for no ids): the organizer shown on events."""
    wanted = {team_id for team_id in team_ids if team_id}
    if not wanted:
        return {}
    return dict(Team.objects.filter(pk__in=wanted).values_list("pk", "name"))


def team_name(team_id: str | None) -> str | None:
    """The name of one team (None for no team, or one that is gone): the organizer on an event's page."""
    return team_names([team_id]).get(team_id) if team_id else None


def all_teams() -> list[Team]:
    """Every team, by name: what a platform admin chooses an overseeing team from."""
    return list(Team.objects.all())


def needs_approval(*, team_id: str) -> bool:
    """Whether a new event of the team is a draft until an approver of its overseeing team publishes it."""
    return Team.objects.filter(pk=team_id, needs_approval=True).exists()


def overseer_of(team_id: str | None) -> str | None:
    """The id of the team whose approvers publish ``team_id``'s drafts (None: no team, or nobody oversees it)."""
    if team_id is None:
        return None
    return Team.objects.filter(pk=team_id).values_list("overseen_by_id", flat=True).first()


def teams_overseen(*, team_ids: Iterable[str]) -> list[Team]:
    """The teams whose drafts wait for an approver of one of ``team_ids``, by name."""
    return list(Team.objects.filter(overseen_by_id__in=list(team_ids)))


def team_list(*, user) -> list[Team]:
    """Every team for a platform admin; otherwise the teams the person belongs to."""
    access = access_of(user)
    teams = Team.objects.all() if access.platform_admin else Team.objects.filter(pk__in=list(access.roles))
    return list(teams)


def teams_holding(*, user, permission: Permission) -> list[Team]:
    """The teams in which ``user`` holds ``permission`` (every team for a platform admin), by name."""
    access = access_of(user)
    teams = Team.objects.all()
    if not access.platform_admin:
        teams = teams.filter(pk__in=sorted(access.teams_holding(permission)))
    return list(teams)


def team_members(*, team_id: str) -> list[Membership]:
    """The team's members, by role (in ROLES' order) then username."""
    order = list(ROLES)
    members = Membership.objects.filter(team_id=team_id).select_related("user")
    return sorted(members, key=lambda m: (order.index(m.role) if m.role in order else len(order),
                                          m.user.get_username()))


def door_volunteers(*, team_id: str, event_id: str) -> list[tuple[Membership, bool]]:
    """The team's door volunteers, each with whether they are assigned to the event."""
    assigned = set(DoorAssignment.objects.filter(membership__team_id=team_id, event_id=event_id)
                   .values_list("membership_id", flat=True))
    members = Membership.objects.filter(team_id=team_id, role=DOOR_VOLUNTEER).select_related("user")
    return [(member, member.pk in assigned) for member in sorted(members, key=lambda m: m.user.get_username())]
