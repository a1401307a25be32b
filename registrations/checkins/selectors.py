"""Reads of the door: counts, who is checked in, and the one read that explains a refused check-in."""

from __future__ import annotations

from registrations.checkins.models import CheckIn, CheckInLogEntry, EventCheckins
from registrations.errors import RegistrationError
from registrations.events.models import Event
from registrations.models import Registration, RegistrationClaim
from registrations.seating import shards
from tems.identity import user_names_for_keys


def checkin_stats(*, event_id: str) -> dict[str, int]:
    """``{confirmed, checked_in}`` of the event: one strongly consistent GetItem of its counters, and one
    BatchGetItem of its seat shards."""
    try:
        counters = EventCheckins.get(*EventCheckins.key_for(event_id), consistent_read=True)
    except EventCheckins.DoesNotExist:
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
    seats = shards.seat_counts(events=[counters])[event_id]
    return {"confirmed": seats.registered, "checked_in": int(counters.checked_in_count or 0)}


def checkin_list(*, event_id: str) -> list[CheckIn]:
    """Everyone checked in to the event, earliest first, each with ``holder_name`` (the name staff see)."""
    checkins = CheckIn.query(Event.pk_for(event_id), CheckIn.sk.startswith(CheckIn.SK_PREFIX), consistent_read=True)
    checkins = sorted(checkins, key=lambda checkin: checkin.checked_in_at)
    names = user_names_for_keys([checkin.user_id for checkin in checkins])
    for checkin in checkins:
        checkin.holder_name = names.get(checkin.user_id, checkin.user_id)
    return checkins


def checkin_history(*, event_id: str) -> list[CheckInLogEntry]:
    """The door's history of the event (check-ins and undos), oldest first."""
    return list(CheckInLogEntry.query(Event.pk_for(event_id), CheckInLogEntry.sk.startswith(CheckInLogEntry.SK_PREFIX),
                                      consistent_read=True))


def registration_at_door(*, event_id: str, registration_id: str,
                         user_id: str) -> Registration | RegistrationClaim | None:
    """The event-side registration item, to explain a refused check-in (never to decide one); for a registration
    that waits with no such item (its waitlist entry is its copy), the ticket holder's claim, if it is this one."""
    try:
        return Registration.get(*Registration.event_key_for(event_id, registration_id), consistent_read=True)
    except Registration.DoesNotExist:
        pass
    try:
        claim = RegistrationClaim.get(*RegistrationClaim.key_for(event_id, user_id), consistent_read=True)
    except RegistrationClaim.DoesNotExist:
        return None
    return claim if claim.registration_id == registration_id else None
