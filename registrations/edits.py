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

from registrations.errors import RegistrationError
from registrations.events.models import DEFAULT_REMINDER_HOURS
from registrations.events.services import EventUpdate, event_update
from tems.merge import Merge, save_with_merge

EDITED_FIELDS = ("title", "location", "starts_at", "capacity", "description", "reminder_hours",
                 "offer_hours")


@dataclass(frozen=True)
class EventEditOutcome:
    saved: EventUpdate
    merge: Merge | None = None  # set when someone had saved in between and their changes were kept


def canonical(values: dict[str, Any]) -> dict[str, Any]:
    """The edited fields in one comparable, JSON-safe form (the start as a UTC ISO string)."""
    starts_at = values["starts_at"]
    if isinstance(starts_at, str):
        starts_at = datetime.fromisoformat(starts_at)
    return {"title": values["title"], "location": values["location"] or "",
            "starts_at": starts_at.astimezone(UTC).isoformat(), "capacity": int(values["capacity"]),
            "description": values["description"] or "",
            "reminder_hours": DEFAULT_REMINDER_HOURS if values.get("reminder_hours") is None
            else int(values["reminder_hours"]),
            "offer_hours": int(values.get("offer_hours") or 0)}


def event_edit(*, event_id: str, expected_version: int, base: dict | None, mine: dict, updated_by: str,
               ) -> EventEditOutcome:
    """Save an edit of the event opened at ``expected_version`` (with values ``base``), merged with later saves.

    Raises RegistrationError: 'conflict' when fields clash (``extra``: ``current`` as event_update gives it,
    plus ``merge`` and ``base``); 'not_found', 'invalid', 'busy' as event_update does.
    """
    def save(version: int, values: dict[str, Any]) -> EventUpdate:
        return event_update(event_id=event_id, expected_version=version, updated_by=updated_by,
                            **{**values, "starts_at": datetime.fromisoformat(values["starts_at"])})

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
