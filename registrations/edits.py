"""Event edits that meet someone else's save: merged three ways (tems.merge), one conditional write each.

``event_update`` refuses an edit of a version that is no longer current. Here that refusal is merged: fields
only this editor changed go on top of the stored version, fields only others changed keep their value, and a
field both changed (a clash) goes back to the person. Events keep no version history, so the page carries the
values it was opened with (a signed token, see tems.merge); the merged write is ``event_update`` conditioned on
the version the merge saw, so a save landing meanwhile is caught again, never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from registrations.errors import RegistrationError
from registrations.events.models import DEFAULT_REMINDER_HOURS
from registrations.events.services import EventUpdate, event_update
from tems.audit import Actor
from tems.merge import Merge, save_with_merge

EDITED_FIELDS = ("title", "location", "starts_at", "capacity", "description", "reminder_hours",
                 "offer_hours", "ends_at", "time_zone", "map_url", "online_url", "category", "organizer", "public",
                 "registration_opens_at", "registration_closes_at")
# Compared and carried as UTC ISO strings (None: not set).
TIMES = ("starts_at", "ends_at", "registration_opens_at", "registration_closes_at")


def _iso(value: Any) -> str | None:
    if value in (None, ""):
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.astimezone(UTC).isoformat()


def as_datetimes(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (canonical) with its times as datetimes again."""
    return {**values, **{name: datetime.fromisoformat(values[name]) if values.get(name) else None
                         for name in TIMES if name in values}}


@dataclass(frozen=True)
class EventEditOutcome:
    saved: EventUpdate
    merge: Merge | None = None  # set when someone had saved in between and their changes were kept


def canonical(values: dict[str, Any]) -> dict[str, Any]:
    """The edited fields in one comparable, JSON-safe form (the start as a UTC ISO string)."""
    zone = values.get("time_zone") or None
    return {"title": values["title"], "location": values["location"] or "",
            **{name: _iso(values.get(name)) for name in TIMES}, "capacity": int(values["capacity"]),
            "description": values["description"] or "",
            "reminder_hours": DEFAULT_REMINDER_HOURS if values.get("reminder_hours") is None
            else int(values["reminder_hours"]),
            "offer_hours": int(values.get("offer_hours") or 0),
            "time_zone": None if zone == settings.TIME_ZONE else zone,
            **{name: values.get(name) or "" for name in ("map_url", "online_url", "category", "organizer")},
            "public": bool(values.get("public"))}


def event_edit(*, event_id: str, expected_version: int, base: dict | None, mine: dict, updated_by: str,
               actor: Actor | None = None) -> EventEditOutcome:
    """Save an edit of the event opened at ``expected_version`` (with values ``base``), merged with later saves.

    Raises RegistrationError: 'conflict' when fields clash (``extra``: ``current`` as event_update gives it,
    plus ``merge`` and ``base``); 'not_found', 'invalid', 'busy' as event_update does.
    """
    def save(version: int, values: dict[str, Any]) -> EventUpdate:
        return event_update(event_id=event_id, expected_version=version, updated_by=updated_by, actor=actor,
                            **as_datetimes(values))

    def stored(error: RegistrationError) -> tuple[dict[str, Any], int] | None:
        if error.code != "conflict" or "current" not in error.extra:
            return None
        current = error.extra["current"]
        return canonical(current), int(current["version"])

    def busy() -> RegistrationError:
        return RegistrationError("busy", "This event kept changing while your edit was merged; nothing was saved. "
                                         "Try again.", retry_after=1)

    outcome = save_with_merge(save=save, stored=stored, expected_version=expected_version, base=base,
                              mine=canonical(mine), fields=EDITED_FIELDS, busy=busy)
    return EventEditOutcome(outcome.saved, outcome.merge)
