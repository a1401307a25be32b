"""The person acting, as the audit log records them: built once per request from the request (``actor_of``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from django.conf import settings

from tems.identity import user_key
from tems.permissions import NoSuchObject, access_of, known_object_teams, object_team

# The role recorded for a platform admin acting on a team they hold no role in (or on an object with no team).
PLATFORM_ADMIN = "platform_admin"


@dataclass(frozen=True)
class Actor:
    """A person's immutable key and their roles as this request found them (team id -> role)."""

    user_id: str
    roles: Mapping[str, str] = field(default_factory=dict)
    platform_admin: bool = False
    # Each team's retention, read at most once per request and team (tems.models.Team.audit_retention_days).
    _retention: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    # The teams of the objects the request's permission check read (tems.permissions.known_object_teams).
    _object_teams: dict[tuple[str, str], str | None] = field(default_factory=dict, compare=False, repr=False)

    def team_of(self, scope: str, object_id: str) -> str | None:
        """The team of the object (``scope``: "event_id", "sku"), as the permission check read it; read here only
        for a platform admin, whose permission needed no team (one GetItem)."""
        if (scope, object_id) not in self._object_teams:
            try:
                self._object_teams[(scope, object_id)] = object_team(scope, object_id)
            except NoSuchObject:
                return None  # the change itself finds it missing and says so
        return self._object_teams[(scope, object_id)]

    def role_in(self, team: str | None) -> str:
        role = self.roles.get(team) if team else None
        if role is None and self.platform_admin:
            return PLATFORM_ADMIN
        return role or ""

    def retention_days(self, team: str | None) -> int:
        """How long the team keeps its log; the site's default for an object without a team."""
        if not team:
            return settings.TEMS_AUDIT_RETENTION_DAYS
        if team not in self._retention:
            from tems.models import Team

            found = Team.objects.filter(pk=team).values_list("audit_retention_days", flat=True).first()
            self._retention[team] = found or settings.TEMS_AUDIT_RETENTION_DAYS
        return self._retention[team]


_CACHE_ATTRIBUTE = "_tems_audit_actor"


def actor_of(request) -> Actor:
    """The logged-in person of ``request`` as an ``Actor``: their key and their roles, read once per request (the
    roles are the ones the permission check already read)."""
    cached = getattr(request, _CACHE_ATTRIBUTE, None)
    if cached is None:
        access = access_of(request.user)
        cached = Actor(user_id=user_key(request.user), roles=dict(access.roles), platform_admin=access.platform_admin,
                       _object_teams=known_object_teams(request.user))
        setattr(request, _CACHE_ATTRIBUTE, cached)
    return cached
