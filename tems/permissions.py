"""Who may do what: every route's permission in one table, ``ROUTES``, keyed by the route's URL name and enforced
by ``PermissionMiddleware`` before any view runs.

A person's power comes from their roles in organizer teams (``tems.models.Membership``); a platform admin
(``is_staff``) holds every permission, and is the only one who may touch an object that has no team. A permission
names the team roles that hold it and, for a route about one object, the URL argument that names the object:
its team (read through the resolver ``settings.TEMS_PERMISSION_SCOPES`` names for that argument) must be one
where the person holds such a role. A door volunteer holds the door only at the events they are assigned to.

Refusals: a person who holds the permission in no team at all is refused (403) without any object being read;
one who holds it in some team but not in the object's gets 403 for an event (events are public: the answer
reveals nothing) and 404 for an object only its team may know of (an inventory item, a team's members).
A route missing from ``ROUTES`` is open to platform admins only, and ``tests/tems/test_permissions.py`` fails.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.module_loading import import_string

from tems.api import problem_from_error
from tems.errors import DomainError
from tems.roles import DOOR_VOLUNTEER, EVENT_MANAGER, INVENTORY_KEEPER, ROLES, TEAM_ADMIN, VIEWER


class Audience(enum.Enum):
    ANYONE = "anyone"  # logged in or not
    USER = "user"  # any logged-in person; the view itself says what is theirs
    STAFF = "staff"  # the roles named, in the object's team; platform admins always


@dataclass(frozen=True)
class Permission:
    name: str
    audience: Audience = Audience.STAFF
    roles: frozenset[str] = frozenset()
    # The URL argument naming the object whose team decides (a key of settings.TEMS_PERMISSION_SCOPES).
    scope: str | None = None
    # Roles that hold the permission only at the events they are assigned to (DoorAssignment).
    assigned_roles: frozenset[str] = frozenset()
    # 404 rather than 403 to a person of another team: the object's existence is its team's business.
    hidden: bool = False
    # Also open to every logged-in person in demo mode (the lab).
    demo_opens: bool = False
    description: str = field(default="", compare=False)


PUBLIC = Permission("public", Audience.ANYONE, description="anyone, logged in or not")
LOGGED_IN = Permission("logged_in", Audience.USER, description="any logged-in person (their own things)")
PLATFORM_ADMIN = Permission("platform_admin", description="platform admins only")
# The admin site asks is_staff itself (and shows its own log-in page to everyone else).
DJANGO_ADMIN = Permission("django_admin", Audience.ANYONE, description="the admin site's own check (is_staff)")
LAB = Permission("lab", demo_opens=True, description="platform admins; everyone logged in when TEMS_DEMO=1")

EVENT_CREATE = Permission("event_create", roles=frozenset({TEAM_ADMIN, EVENT_MANAGER}),
                          description="create an event for one of their teams")
EVENT_MANAGE = Permission("event_manage", roles=frozenset({TEAM_ADMIN, EVENT_MANAGER}), scope="event_id",
                          description="edit, cancel, questions, messages, attendees, retention of the team's events")
EVENT_DOORS = Permission("event_doors", roles=frozenset({TEAM_ADMIN}), scope="event_id",
                         description="assign the team's door volunteers to the event")
EVENT_DOOR = Permission("event_door", roles=frozenset({TEAM_ADMIN, EVENT_MANAGER, DOOR_VOLUNTEER}),
                        scope="event_id", assigned_roles=frozenset({DOOR_VOLUNTEER}),
                        description="check people in at the event: names and the answers shown at the door")
EVENT_REPORTS = Permission("event_reports", roles=frozenset({TEAM_ADMIN, EVENT_MANAGER, VIEWER}), scope="event_id",
                           description="the event's figures")
# The door's count is a figure the door screen shows: door volunteers at their events, and readers of reports.
EVENT_COUNTS = Permission("event_counts", roles=frozenset({TEAM_ADMIN, EVENT_MANAGER, DOOR_VOLUNTEER, VIEWER}),
                          scope="event_id", assigned_roles=frozenset({DOOR_VOLUNTEER}),
                          description="the event's check-in count")
# Approval of a society's events: the team admins and event managers of the team that oversees it (Team.overseen_by).
EVENT_APPROVE = Permission("event_approve", roles=frozenset({TEAM_ADMIN, EVENT_MANAGER}), scope="draft_id",
                           hidden=True, description="publish or send back the drafts of teams their team oversees")
APPROVALS = Permission("approvals", roles=frozenset({TEAM_ADMIN, EVENT_MANAGER}),
                       description="the drafts waiting for their team's approval")
INVENTORY = Permission("inventory", roles=frozenset({TEAM_ADMIN, INVENTORY_KEEPER}),
                       description="the inventory of their teams: list, create, import")
INVENTORY_ITEM = Permission("inventory_item", roles=frozenset({TEAM_ADMIN, INVENTORY_KEEPER}), scope="sku",
                            hidden=True, description="one item of their team's inventory")
TEAM_MANAGE = Permission("team_manage", roles=frozenset({TEAM_ADMIN}), scope="team_id", hidden=True,
                         description="the team's members and their roles")
TEAMS = Permission("teams", roles=frozenset(ROLES), description="the list of their own teams")

# A route whose answer depends on the method: the method's entry, else "*".
Rule = Permission | Mapping[str, Permission]

# Every route, by URL name ("namespace:name"; "namespace:*" covers a namespace that is not ours to name).
ROUTES: dict[str, Rule] = {
    # tems
    "home": PUBLIC,
    "favicon": PUBLIC,
    "idempotency_policy": PUBLIC,
    "account": LOGGED_IN,
    "calendar_feed_revoke": LOGGED_IN,
    "login": PUBLIC,
    "logout": PUBLIC,
    "signup": PUBLIC,
    "password_change": LOGGED_IN,
    "password_reset": PUBLIC,
    "password_reset_done": PUBLIC,
    "password_reset_confirm": PUBLIC,
    "password_reset_complete": PUBLIC,
    "oidc_start": PUBLIC,
    "oidc_callback": PUBLIC,
    "oidc_link": LOGGED_IN,
    "verify_email": LOGGED_IN,
    "verify_email_confirm": PUBLIC,
    "admin:*": DJANGO_ADMIN,
    "teams:team_list": TEAMS,
    "teams:team_create": PLATFORM_ADMIN,
    "teams:team_detail": TEAM_MANAGE,
    "teams:team_approval": PLATFORM_ADMIN,
    "teams:member_add": TEAM_MANAGE,
    "teams:member_role": TEAM_MANAGE,
    "teams:member_remove": TEAM_MANAGE,
    "teams:team_log": TEAM_MANAGE,
    "teams:team_retention": TEAM_MANAGE,
    # registrations
    # The list, the month and an event's page show public events to visitors; the views ask for a log-in for
    # the rest.
    "registrations:event_list": PUBLIC,
    "registrations:event_calendar": PUBLIC,
    "registrations:event_list_past": LOGGED_IN,
    "registrations:event_create": EVENT_CREATE,
    "registrations:event_detail": PUBLIC,
    "registrations:event_copy": EVENT_MANAGE,
    "registrations:event_report": EVENT_REPORTS,
    "registrations:event_report_csv": EVENT_REPORTS,
    "registrations:event_message_progress": EVENT_MANAGE,
    # Signed with the student's own token: a calendar app polls it without a session.
    "registrations:calendar_feed": PUBLIC,
    "registrations:event_edit": EVENT_MANAGE,
    "registrations:event_doors": EVENT_DOORS,
    # Who changed the event and who read its attendees: the people who manage it (tems.audit).
    "registrations:event_log": EVENT_MANAGE,
    "registrations:registration_create": LOGGED_IN,
    "registrations:attendee_list": EVENT_MANAGE,
    "registrations:event_messages": EVENT_MANAGE,
    "registrations:event_cancel": EVENT_MANAGE,
    "registrations:event_questions": EVENT_MANAGE,
    "registrations:attendee_export": EVENT_MANAGE,
    "registrations:approval_list": APPROVALS,
    "registrations:event_publish": EVENT_APPROVE,
    "registrations:event_send_back": EVENT_APPROVE,
    "registrations:api_event_publish": EVENT_APPROVE,
    "registrations:my_registrations": LOGGED_IN,
    "registrations:registration_calendar": LOGGED_IN,
    "registrations:registration_qr": LOGGED_IN,
    "registrations:registration_cancel": LOGGED_IN,
    "registrations:offer_respond": LOGGED_IN,
    "registrations:offer_page": PUBLIC,  # a signed link from the offer mail: the token is the permission
    "registrations:api_events": {"POST": EVENT_CREATE, "*": LOGGED_IN},
    "registrations:api_event_detail": {"PUT": EVENT_MANAGE, "*": LOGGED_IN},
    "registrations:api_registration_create": LOGGED_IN,
    "registrations:api_attendee_list": EVENT_MANAGE,
    "registrations:api_event_questions": {"PUT": EVENT_MANAGE, "*": LOGGED_IN},
    "registrations:api_event_messages": EVENT_MANAGE,
    "registrations:api_event_cancel": EVENT_MANAGE,
    "registrations:api_message_detail": EVENT_MANAGE,
    "registrations:api_my_registrations": LOGGED_IN,
    "registrations:api_registration_cancel": LOGGED_IN,
    "registrations:api_offer_accept": LOGGED_IN,
    "registrations:api_offer_decline": LOGGED_IN,
    # the door
    "checkins:door": EVENT_DOOR,
    "checkins:door_service_worker": PUBLIC,  # a static script, served under the page's path for its scope
    "checkins:ticket": LOGGED_IN,
    "checkins:api_checkin_create": EVENT_DOOR,
    "checkins:api_checkin_stats": EVENT_COUNTS,
    "checkins:api_checkin_undo": EVENT_DOOR,
    "checkins:api_door_answers": EVENT_DOOR,
    "checkins:api_door_search": EVENT_DOOR,
    "checkins:api_door_list": EVENT_DOOR,
    # a person's data, and an event's answer retention
    "privacy:personal_data": LOGGED_IN,
    "privacy:personal_data_download": LOGGED_IN,
    "privacy:personal_data_erase": LOGGED_IN,
    "privacy:event_retention": EVENT_MANAGE,
    "privacy:api_personal_data": LOGGED_IN,
    "privacy:api_personal_data_erase": LOGGED_IN,
    "privacy:api_event_retention": EVENT_MANAGE,
    # inventory
    "inventory:item_list": INVENTORY,
    "inventory:item_create": INVENTORY,
    "inventory:stock_import": INVENTORY,
    # Operators' diagnostics (the table's write units and refusals), not a storekeeper's page.
    "inventory:metrics": PLATFORM_ADMIN,
    "inventory:metrics_moved": PLATFORM_ADMIN,
    "inventory:item_detail": INVENTORY_ITEM,
    "inventory:item_edit": INVENTORY_ITEM,
    "inventory:item_adjust": INVENTORY_ITEM,
    "inventory:item_history": INVENTORY_ITEM,
    "inventory:api_items": INVENTORY,
    "inventory:api_item_detail": INVENTORY_ITEM,
    "inventory:api_adjustments": INVENTORY_ITEM,
    "inventory:api_history": INVENTORY_ITEM,
    # the lab
    "lab:*": LAB,
}

# Undeclared: fail closed, to the one kind of person who could reach any route before teams existed.
UNDECLARED = Permission("undeclared", description="not in ROUTES: platform admins only")


def rule_for(view_name: str) -> Rule | None:
    """The declared rule of a route by its URL name, or None if it has none."""
    if view_name in ROUTES:
        return ROUTES[view_name]
    namespace, _, _ = view_name.rpartition(":")
    return ROUTES.get(f"{namespace}:*") if namespace else None


def permission_for(view_name: str, method: str) -> Permission:
    rule = rule_for(view_name)
    if rule is None:
        return UNDECLARED
    if isinstance(rule, Permission):
        return rule
    return rule.get(method, rule["*"])


# --- a person's roles -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Access:
    """A person's roles, read once per request (two small queries of Django's database, no DynamoDB request)."""

    platform_admin: bool
    roles: Mapping[str, str]  # team id -> role
    doors: frozenset[str]  # event ids they are assigned to as a door volunteer

    def teams_holding(self, permission: Permission) -> set[str]:
        return {team for team, role in self.roles.items() if role in permission.roles}

    def holds(self, permission: Permission, *, team: str | None, event_id: str | None = None) -> bool:
        """Whether they hold ``permission`` for an object of ``team`` (None: an object without a team)."""
        if self.platform_admin:
            return True
        role = self.roles.get(team) if team is not None else None
        if role is None or role not in permission.roles:
            return False
        return role not in permission.assigned_roles or event_id in self.doors


NOBODY = Access(platform_admin=False, roles={}, doors=frozenset())


def access_of(user) -> Access:
    """``user``'s roles, cached on the user object for the rest of the request."""
    if not user.is_authenticated:
        return NOBODY
    cached = getattr(user, "_tems_access", None)
    if cached is None:
        from tems.models import DoorAssignment, Membership

        roles = dict(Membership.objects.filter(user=user).values_list("team_id", "role"))
        doors = frozenset(DoorAssignment.objects.filter(membership__user=user).values_list("event_id", flat=True)
                          ) if DOOR_VOLUNTEER in roles.values() else frozenset()
        cached = Access(platform_admin=user.is_staff, roles=roles, doors=doors)
        user._tems_access = cached
    return cached


def holds(user, permission: Permission, *, team: str | None, event_id: str | None = None) -> bool:
    """Whether ``user`` holds ``permission`` for an object of ``team``: for pages that show a link or a panel."""
    return access_of(user).holds(permission, team=team, event_id=event_id)


def teams_within(user, permission: Permission) -> set[str] | None:
    """The ids of the teams whose objects ``user`` may reach under ``permission`` (None: every object, a platform
    admin's): what a list of many objects is filtered by."""
    access = access_of(user)
    return None if access.platform_admin else access.teams_holding(permission)


def holds_anywhere(user, permission: Permission) -> bool:
    access = access_of(user)
    return access.platform_admin or bool(access.teams_holding(permission))


# --- deciding a request ---------------------------------------------------------------------------------------
class Decision(enum.Enum):
    ALLOW = "allow"
    LOG_IN = "log_in"
    FORBID = "forbid"
    NOT_FOUND = "not_found"


class NoSuchObject(LookupError):
    """Raised by a scope resolver for an id that names nothing."""


@functools.cache
def _resolver(scope: str) -> Callable[[str], str | None]:
    return import_string(settings.TEMS_PERMISSION_SCOPES[scope])


def object_team(scope: str, object_id: str) -> str | None:
    """The team of the object ``object_id`` names; raises NoSuchObject."""
    return _resolver(scope)(object_id)


def known_object_teams(user) -> dict[tuple[str, str], str | None]:
    """The teams of the objects this request's permission checks read, by (scope, object id)."""
    known = getattr(user, "_tems_object_teams", None)
    if known is None:
        known = {}
        user._tems_object_teams = known
    return known


def decide(user, permission: Permission, kwargs: Mapping[str, str]) -> Decision:
    if permission.audience is Audience.ANYONE:
        return Decision.ALLOW
    if not user.is_authenticated:
        return Decision.LOG_IN
    if permission.audience is Audience.USER or (permission.demo_opens and settings.TEMS_DEMO):
        return Decision.ALLOW
    access = access_of(user)
    if access.platform_admin:
        return Decision.ALLOW
    # Refused here when no team of theirs could hold it: nothing is read for a student.
    if not access.teams_holding(permission):
        return Decision.FORBID
    if permission.scope is None:
        return Decision.ALLOW
    object_id = kwargs[permission.scope]
    try:
        team = object_team(permission.scope, object_id)
    except NoSuchObject:
        return Decision.NOT_FOUND
    # Kept for the rest of the request: the audit log records the team without reading it again (tems.audit).
    known_object_teams(user)[(permission.scope, object_id)] = team
    event_id = object_id if permission.scope == "event_id" else None
    if access.holds(permission, team=team, event_id=event_id):
        return Decision.ALLOW
    return Decision.NOT_FOUND if permission.hidden else Decision.FORBID


_REFUSALS = {
    Decision.LOG_IN: DomainError("unauthenticated", "Log in first: this API uses the same session as the web pages."),
    Decision.FORBID: DomainError("forbidden", "Your roles do not include this."),
    Decision.NOT_FOUND: DomainError("not_found", "There is nothing at this address."),
}


class PermissionMiddleware:
    """Asks ``ROUTES`` about every request once it is routed: the view runs only if the person may."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> HttpResponse | None:
        permission = permission_for(request.resolver_match.view_name, request.method)
        decision = decide(request.user, permission, view_kwargs)
        if decision is Decision.ALLOW:
            return None
        if request.path.startswith("/api/"):
            return problem_from_error(_REFUSALS[decision])
        if decision is Decision.LOG_IN:
            return redirect_to_login(request.get_full_path())
        if decision is Decision.NOT_FOUND:
            raise Http404(_REFUSALS[decision].detail)
        raise PermissionDenied(_REFUSALS[decision].detail)
