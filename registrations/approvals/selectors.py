"""Reads of drafts: which wait for a person's approval, and who may see one."""

from __future__ import annotations

from registrations.events.models import Event
from tems.permissions import EVENT_APPROVE, EVENT_MANAGE, NoSuchObject, access_of, teams_within
from tems.teams.selectors import overseer_of, teams_overseen

# The drafts' listing is small (a society's events before an approver looks), read whole by one Query.
MAX_DRAFTS = 200


def draft_overseer(event_id: str) -> str | None:
    """The team whose approvers publish the event (None: nobody but platform admins); for tems.permissions'
    ``draft_id`` scope, raising NoSuchObject for an unknown event. Consistent: a draft just created is found."""
    try:
        event = Event.get(*Event.key_for(event_id), consistent_read=True, attributes_to_get=["team"])
    except Event.DoesNotExist:
        raise NoSuchObject(event_id) from None
    return overseer_of(event.team)


def drafts_waiting(*, user) -> list[Event]:
    """The drafts ``user`` may publish, soonest first: every draft for a platform admin, else those of the teams
    overseen by a team where they hold ``EVENT_APPROVE``."""
    return drafts_for(user=user)[0]


def drafts_for(*, user) -> tuple[list[Event], list[Event]]:
    """(the drafts ``user`` may publish, the drafts of their own teams waiting for someone else), soonest first,
    from one Query of the drafts' listing."""
    drafts = [event for event in Event.by_start.query(Event.DRAFTS, limit=MAX_DRAFTS) if event.is_draft]
    approving = teams_within(user, EVENT_APPROVE)
    if approving is None:
        return drafts, []
    overseen = {team.pk for team in teams_overseen(team_ids=approving)}
    managed = teams_within(user, EVENT_MANAGE) or set()
    return ([event for event in drafts if event.team in overseen],
            [event for event in drafts if event.team in managed and event.team not in overseen])


def draft_visible_to(user, event: Event) -> bool:
    """Whether ``user`` may see the draft ``event``: its team's members, its overseeing team's approvers,
    platform admins. A student meets no draft anywhere: to them it does not exist."""
    access = access_of(user)
    if access.platform_admin or (event.team is not None and event.team in access.roles):
        return True
    overseer = overseer_of(event.team)
    return overseer is not None and access.holds(EVENT_APPROVE, team=overseer)
