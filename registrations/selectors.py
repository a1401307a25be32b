"""Reads of the registrations app."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import segno

from registrations.checkins.tickets import ticket_url
from registrations.errors import RegistrationError
from registrations.models import WAITLISTED, Event, Registration, RegistrationClaim, WaitlistEntry
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


# --- registrations ------------------------------------------------------------------------------------------

def registration_qr_svg(*, ticket_url: str) -> str:
    """An inline SVG QR code of the registration's ticket URL (deterministic: same ticket, same drawing)."""
    code = segno.make(ticket_url, error="m")
    return code.svg_inline(scale=4, omitsize=True, title="Ticket QR code", svgclass="qr")


def registration_to_dict(*, registration_id: str, event_id: str, user_id: str, status: str,
                         position: int | None, created_at: datetime, user_name: str | None = None) -> dict[str, Any]:
    """The API's representation of a registration (also what the idempotency record stores and replays).

    ``user`` shows the display name; the immutable ``user_id`` stays internal (synthetic lab and bench students
    have no name, and show their id). ``ticket_url`` is signed from the registration's stable facts only, so a
    replay shows the same ticket.
    """
    url = ticket_url(event_id=event_id, registration_id=registration_id, user_id=user_id)
    return {
        "registration_id": registration_id,
        "event_id": event_id,
        "user": user_name or user_id,
        "status": status,
        "position": position,
        "ticket_url": url,
        "qr_svg": registration_qr_svg(ticket_url=url),
        "created_at": created_at.isoformat(),
    }


def claim_get(*, event_id: str, user_id: str) -> RegistrationClaim | None:
    """The student's live registration for the event (one GetItem by exact key), or None."""
    try:
        return RegistrationClaim.get(*RegistrationClaim.key_for(event_id, user_id), consistent_read=True)
    except RegistrationClaim.DoesNotExist:
        return None


def registration_get(*, user_id: str, registration_id: str) -> Registration:
    """The caller's own registration; RegistrationError('not_found') for anyone else's (keys are per user)."""
    try:
        return Registration.get(*Registration.user_key_for(user_id, registration_id), consistent_read=True)
    except Registration.DoesNotExist:
        raise RegistrationError("not_found", f"You have no registration with id {registration_id!r}.") from None


def waitlist_head(*, event_id: str) -> WaitlistEntry | None:
    """The first entry of the event's waiting list (smallest ticket), read strongly consistently."""
    entries = WaitlistEntry.query(
        Event.pk_for(event_id), WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX),
        consistent_read=True, limit=1,
    )
    return next(iter(entries), None)


def waitlist_heads(*, event_id: str, limit: int) -> list[WaitlistEntry]:
    """The first ``limit`` entries of the event's waiting list in ticket order, read strongly consistently."""
    return list(WaitlistEntry.query(
        Event.pk_for(event_id), WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX),
        consistent_read=True, limit=limit,
    ))


def waitlist_position(*, event_id: str, ticket: int) -> int:
    """1 for the head of the queue: the number of entries whose ticket is not after ``ticket``."""
    return WaitlistEntry.count(
        Event.pk_for(event_id),
        WaitlistEntry.sk.between(WaitlistEntry.sk_for(0), WaitlistEntry.sk_for(ticket)),
        consistent_read=True,
    )


def waitlist_entries(*, event_id: str) -> list[WaitlistEntry]:
    """The whole waiting list, head first."""
    return list(WaitlistEntry.query(
        Event.pk_for(event_id), WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX), consistent_read=True,
    ))


def registration_view(*, registration: Registration | RegistrationClaim) -> dict[str, Any]:
    """``registration_to_dict`` of a stored registration, with its waitlist position as of now."""
    position = None
    if registration.status == WAITLISTED and registration.ticket is not None:
        position = waitlist_position(event_id=registration.event_id, ticket=int(registration.ticket))
    return registration_to_dict(
        registration_id=registration.registration_id, event_id=registration.event_id,
        user_id=registration.user_id, status=registration.status, position=position,
        created_at=registration.created_at, user_name=registration.user_name,
    )


def registration_list(*, user_id: str) -> list[dict[str, Any]]:
    """The caller's registrations, newest first, each with its event's title and start (for the page)."""
    registrations = sorted(
        Registration.query(Registration.user_pk_for(user_id), Registration.sk.startswith(Registration.SK_PREFIX),
                           consistent_read=True),
        key=lambda r: r.created_at, reverse=True,
    )
    event_ids = {r.event_id for r in registrations}
    events = {e.event_id: e for e in Event.batch_get([Event.key_for(event_id) for event_id in event_ids])}
    listed = []
    for registration in registrations:
        event = events.get(registration.event_id)
        listed.append({
            **registration_view(registration=registration),
            "event_title": event.title if event else registration.event_id,
            "event_starts_at": event.starts_at.isoformat() if event else None,
            "event_location": event.location if event else "",
        })
    return listed
