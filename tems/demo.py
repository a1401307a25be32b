"""Demo accounts shared by seed_demo, the log-in page and the lab."""

from django.contrib.auth.models import User

from tems.accounts import email_address_mark_verified, email_address_verified
from tems.models import Membership, Team
from tems.permissions import DOOR_VOLUNTEER, EVENT_MANAGER, INVENTORY_KEEPER, ROLES, TEAM_ADMIN, VIEWER

DEMO_PASSWORD = "tems-demo-pass"
DEMO_STAFF = "staff"
DEMO_STUDENTS = ("alice", "bob", "chen", "dara", "emeka")
# Names, so the demo's attendee lists show what staff see in use.
# Two organizer teams with one member in each role ("staff" above is the platform admin): team id, name,
# {role: username}. The demo events and items name these team ids (registrations/demo.py, inventory/demo.py).
DEMO_TEAMS = (
    ("compsoc", "Computing Society", {TEAM_ADMIN: "cs-admin", EVENT_MANAGER: "cs-events", DOOR_VOLUNTEER: "cs-door",
                                      INVENTORY_KEEPER: "cs-stores", VIEWER: "cs-viewer"}),
    ("union", "Students' Union", {TEAM_ADMIN: "su-admin", EVENT_MANAGER: "su-events", DOOR_VOLUNTEER: "su-door",
                                  INVENTORY_KEEPER: "su-stores", VIEWER: "su-viewer"}),
)
# A society's events need approval by the union (Team.needs_approval): su-admin and su-events publish them.
DEMO_OVERSIGHT = {"compsoc": "union"}
DEMO_NAMES = {"staff": ("Sam", "Staff"), "alice": ("Alice", "Adeyemi"), "bob": ("Bob", "Brennan"),
              "chen": ("Chen", "Wei"), "dara": ("Dara", "Ó Briain"), "emeka": ("Emeka", "Okafor")}


def _team_member_name(username: str) -> tuple[str, str]:
    role = next(role for _, _, members in DEMO_TEAMS for role, member in members.items() if member == username)
    return username.split("-")[0].upper(), ROLES[role]


def demo_team_members() -> list[str]:
    return [username for _, _, members in DEMO_TEAMS for username in members.values()]


def seed_users() -> list[str]:
    """Create the demo accounts that are missing; returns the usernames it created."""
    created = []
    for username in (DEMO_STAFF, *DEMO_STUDENTS, *demo_team_members()):
        first, last = DEMO_NAMES.get(username) or _team_member_name(username)
        user, was_created = User.objects.get_or_create(
            username=username, defaults={"email": f"{username}@demo.tems.invalid", "is_staff": username == DEMO_STAFF,
                                         "first_name": first, "last_name": last}
        )
        if was_created:
            user.set_password(DEMO_PASSWORD)
            user.save()
            created.append(username)
        # Their .invalid addresses reach nobody; verified, they show the notification mails in make run.
        if not email_address_verified(user=user):
            email_address_mark_verified(user=user)
    return created


def seed_teams() -> list[str]:
    """Create the demo teams and memberships that are missing; returns the team ids it created."""
    created = []
    for team_id, name, members in DEMO_TEAMS:
        team, was_created = Team.objects.get_or_create(id=team_id, defaults={"name": name})
        if was_created:
            created.append(team_id)
        for role, username in members.items():
            Membership.objects.get_or_create(user=User.objects.get(username=username), team=team,
                                             defaults={"role": role})
    for team_id, overseer in DEMO_OVERSIGHT.items():
        Team.objects.filter(pk=team_id).update(needs_approval=True, overseen_by_id=overseer)
    return created


def seed() -> str:
    """``seed_demo``'s hook (every installed app may have one in ``<app>/demo.py``): create, then say what."""
    return f"{len(seed_users())} demo account(s), {len(seed_teams())} team(s)"
