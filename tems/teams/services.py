"""Writes of teams: a platform admin creates a team and names its admins; a team admin manages members, roles and
which door volunteer works which event. Every refusal is a DomainError that names the field."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from tems.errors import DomainError
from tems.models import DoorAssignment, Membership, Team
from tems.permissions import DOOR_VOLUNTEER, ROLES, TEAM_ADMIN


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


def member_add(*, team_id: str, username: str, role: str) -> Membership:
    _check_role(role)
    (user,) = _users([username], field="username")
    try:
        with transaction.atomic():
            return Membership.objects.create(user=user, team_id=team_id, role=role)
    except IntegrityError:
        raise DomainError("invalid", f"{username} is already in this team: change their role instead.",
                          errors={"username": ["Already in this team."]}) from None


def _keep_an_admin(team_id: str, membership: Membership) -> None:
    # Checked inside the write's transaction: two admins demoting each other at once leave one of them.
    if membership.role == TEAM_ADMIN and not Membership.objects.select_for_update().filter(
            team_id=team_id, role=TEAM_ADMIN).exclude(pk=membership.pk).exists():
        raise DomainError("conflict", "A team keeps at least one team admin: name another first.")


def member_role_set(*, team_id: str, membership_id: int, role: str) -> Membership:
    _check_role(role)
    with transaction.atomic():
        membership = _membership(team_id, membership_id)
        if role != TEAM_ADMIN:
            _keep_an_admin(team_id, membership)
        if membership.role == DOOR_VOLUNTEER and role != DOOR_VOLUNTEER:
            membership.doors.all().delete()
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def member_remove(*, team_id: str, membership_id: int) -> None:
    with transaction.atomic():
        membership = _membership(team_id, membership_id)
        _keep_an_admin(team_id, membership)
        membership.delete()


def _membership(team_id: str, membership_id: int) -> Membership:
    try:
        return Membership.objects.select_for_update().select_related("user").get(pk=membership_id, team_id=team_id)
    except Membership.DoesNotExist:
        raise DomainError("not_found", "That person is not in this team.") from None


def doors_set(*, team_id: str, event_id: str, membership_ids: set[int]) -> None:
    """Assign exactly these door volunteers of the team to the event (the others are unassigned)."""
    with transaction.atomic():
        volunteers = set(Membership.objects.filter(team_id=team_id, role=DOOR_VOLUNTEER, pk__in=membership_ids)
                         .values_list("pk", flat=True))
        if volunteers != membership_ids:
            raise DomainError("invalid", "Choose among the team's door volunteers.",
                              errors={"volunteers": ["Not a door volunteer of this team."]})
        DoorAssignment.objects.filter(membership__team_id=team_id, event_id=event_id).exclude(
            membership_id__in=volunteers).delete()
        for membership_id in volunteers:
            DoorAssignment.objects.get_or_create(membership_id=membership_id, event_id=event_id)


def team_approval_set(*, team_id: str, needs_approval: bool, overseen_by: str | None) -> Team:
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
        team.needs_approval = needs_approval
        team.overseen_by_id = overseen_by
        team.save(update_fields=["needs_approval", "overseen_by"])
    return team


def _team_for_update(team_id: str) -> Team:
    try:
        return Team.objects.select_for_update().get(pk=team_id)
    except Team.DoesNotExist:
        raise DomainError("not_found", "There is no such team.") from None
