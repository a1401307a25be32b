"""Reads of the registrations app."""

from __future__ import annotations

from datetime import datetime

from registrations.errors import RegistrationError
from registrations.models import Event
from tems.clock import utcnow


def event_get(*, event_id: str, consistent: bool = True) -> Event:
    """The event, read strongly consistently by default (an edit form must show the latest version)."""
    try:
        return Event.get(*Event.key_for(event_id), consistent_read=consistent)
    except Event.DoesNotExist:
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None


def event_list(*, now: datetime | None = None) -> tuple[list[Event], list[Event]]:
    """(upcoming events, soonest first; past events, most recent first) from the start-time index."""
    cutoff = Event.listing_key(now or utcnow(), "")
    events = list(Event.by_start.query(Event.COLLECTION))
    upcoming = [event for event in events if event.gsi1sk >= cutoff]
    past = [event for event in reversed(events) if event.gsi1sk < cutoff]
    return upcoming, past


def event_to_dict(event: Event) -> dict:
    return {
        "id": event.event_id,
        "title": event.title,
        "description": event.description,
        "location": event.location,
        "starts_at": event.starts_at.isoformat(),
        "capacity": int(event.capacity),
        "registered_count": int(event.registered_count),
        "waitlist_count": int(event.waitlist_count),
        "version": int(event.version),
    }
