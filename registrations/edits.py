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
from registrations.services import EventUpdate, event_update
from tems.merge import Merge, three_way_merge

EDITED_FIELDS = ("title", "location", "starts_at", "capacity", "description")
# A round is lost only when another save committed in between (progress for someone), so N people saving at
# once need at most N rounds; past this many, others are saving faster than a person could follow anyway.
MERGE_ATTEMPTS = 10
_UNKNOWN = object()  # an unknown base: unequal to every value, so each difference is a clash to decide


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
            "description": values["description"] or ""}


def event_edit(*, event_id: str, expected_version: int, base: dict | None, mine: dict, updated_by: str,
               ) -> EventEditOutcome:
    """Save an edit of the event opened at ``expected_version`` (with values ``base``), merged with later saves.

    Raises RegistrationError: 'conflict' when fields clash (``extra``: ``current`` as event_update gives it,
    plus ``merge`` and ``base``); 'not_found', 'invalid', 'busy' as event_update does.
    """
    mine = canonical(mine)
    assumed = base if base is not None else dict.fromkeys(EDITED_FIELDS, _UNKNOWN)
    version, merged = expected_version, None
    for _ in range(MERGE_ATTEMPTS):
        values = merged.values if merged else mine
        try:
            saved = event_update(event_id=event_id, expected_version=version, updated_by=updated_by,
                                 **{**values, "starts_at": datetime.fromisoformat(values["starts_at"])})
        except RegistrationError as error:
            if error.code != "conflict" or "current" not in error.extra:
                raise
            current = error.extra["current"]
            merged = three_way_merge(base=assumed, theirs=canonical(current), mine=mine, fields=EDITED_FIELDS)
            if not merged.clean:
                error.extra.update(merge=merged, base=base)
                raise
            version = int(current["version"])
            continue
        return EventEditOutcome(saved, merged)
    raise RegistrationError("busy", "This event kept changing while your edit was merged; nothing was saved. "
                                    "Try again.", retry_after=1)
