"""Reads of the door: counts, who is checked in, and the one read that explains a refused check-in."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

from registrations import attendees
from registrations.checkins.models import CheckIn, CheckInLogEntry, EventCheckins
from registrations.errors import RegistrationError
from registrations.events.models import Event
from registrations.models import REGISTRATION_BUCKETS, Registration, RegistrationClaim
from registrations.seating import shards
from registrations.serializers import attendee_to_dict, door_row_to_dict
from registrations.ticket_tokens import Ticket, short_code_from_text
from tems.dynamo import batch_get_models
from tems.identity import user_full_names_for_keys, user_keys_matching, user_names_for_keys
from tems.pagination import Page

# A door search names a person, not a crowd: past this many accounts the doorkeeper is asked to type more.
DOOR_SEARCH_LIMIT = 20
MAX_DOOR_SEARCH_CHARS = 100
# The door's own copy of the list (for offline search) is read in pages this long: fewer round trips when a
# door opens on a large event, and still at most this many items read per bucket.
DOOR_LIST_PAGE = 200


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


def checked_in(*, event: Event, registration_id: str) -> bool:
    """Whether the registration's ticket was scanned in: no read while nobody is checked in to the event (its
    door counter), else one GetItem by exact key."""
    if not event.checked_in_count:
        return False
    try:
        CheckIn.get(*CheckIn.key_for(event.event_id, registration_id), consistent_read=True)
    except CheckIn.DoesNotExist:
        return False
    return True


def checked_in_registrations(*, registrations: list[tuple[Event, str]]) -> set[str]:
    """The ids among ``(event, registration_id)`` whose tickets were scanned in: one BatchGetItem (100 keys a
    request) of the check-ins of those at events where anyone is checked in, none otherwise."""
    keys = [CheckIn.key_for(event.event_id, registration_id) for event, registration_id in registrations
            if event.checked_in_count]
    return {checkin.registration_id for checkin in CheckIn.batch_get(keys)} if keys else set()


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


def checkins_for(*, event_id: str, registration_ids: Iterable[str]) -> dict[str, CheckIn]:
    """The check-ins of these registrations of the event, by registration id: BatchGetItem by key (100 a page)."""
    found = batch_get_models([(CheckIn, CheckIn.key_for(event_id, registration_id))
                              for registration_id in set(registration_ids)])
    return {checkin.registration_id: checkin for checkin in found}


def ticket_for_code(*, event_id: str, code: str) -> Ticket:
    """The ticket of the registration of ``event_id`` whose id starts with ``code`` (a short code read out at the
    door). One Query per bucket (REGISTRATION_BUCKETS), each a key prefix with at most two items: bounded however
    large the event. Raises RegistrationError('invalid') with ``reason`` 'unknown_code' (no registration with a
    seat has it) or 'ambiguous_code' (two do: the rest of the id, the QR code or the name tells them apart)."""
    found: list[Registration] = []
    prefix = Registration.SK_PREFIX + code
    for bucket in range(REGISTRATION_BUCKETS):
        found.extend(Registration.query(Registration.event_pk_for(event_id, bucket), Registration.sk.startswith(prefix),
                                        limit=2, consistent_read=True))
    if not found:
        raise RegistrationError("invalid", f"No registration with a seat at this event has the code {code}: check "
                                "it with the student (it is under their QR code), or search their name.",
                                reason="unknown_code")
    if len(found) > 1:
        raise RegistrationError("invalid", f"More than one registration starts with {code}: scan the QR code or "
                                "search the name.", reason="ambiguous_code")
    return Ticket(event_id=event_id, registration_id=found[0].registration_id, user_id=found[0].user_id)


def _search_text(text: Any) -> str:
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise RegistrationError("invalid", "Type a name, a username or a ticket code.", errors={"q": ["Not text."]})
    text = " ".join(text.split())
    if len(text) > MAX_DOOR_SEARCH_CHARS:
        raise RegistrationError("invalid", f"A search is at most {MAX_DOOR_SEARCH_CHARS} characters.",
                                errors={"q": ["Too long."]})
    if any(unicodedata.category(char) in ("Cc", "Cs", "Co", "Cn") for char in text):
        raise RegistrationError("invalid", "The search has characters no name has; type the name again.",
                                errors={"q": ["Not a name."]})
    return text


def door_search(*, event_id: str, text: Any) -> dict[str, Any]:
    """The event's registrations whose holder's first name, last name or username starts with every word of
    ``text``, or whose short code ``text`` is; each an attendee row with its check-in, short code and ticket.

    ``{"attendees": [...], "more": bool}`` (``more``: more accounts matched than DOOR_SEARCH_LIMIT; type more).
    Bounded: one SQL query of at most DOOR_SEARCH_LIMIT + 1 accounts, one BatchGetItem of their claims on this
    event, one of the check-ins (a code: a key-prefix Query per bucket instead of the SQL query). Raises
    RegistrationError('invalid') for a search that is not short text.
    """
    text = _search_text(text)
    if not text:
        return {"attendees": [], "more": False}
    code = short_code_from_text(text)
    more = False
    if code is not None:
        try:
            ticket = ticket_for_code(event_id=event_id, code=code)
        except RegistrationError:
            registrations = []
        else:
            # The claim, not the copy the code was found on: it is what a name search shows, in the same shape.
            registrations = batch_get_models([(RegistrationClaim,
                                               RegistrationClaim.key_for(event_id, ticket.user_id))])
    else:
        keys, more = user_keys_matching(text, limit=DOOR_SEARCH_LIMIT)
        registrations = batch_get_models([(RegistrationClaim, RegistrationClaim.key_for(event_id, key))
                                          for key in keys])
    return {"attendees": _door_rows(event_id, registrations), "more": more}


def _door_rows(event_id: str, registrations: list[Registration | RegistrationClaim]) -> list[dict[str, Any]]:
    checkins = checkins_for(event_id=event_id, registration_ids=[r.registration_id for r in registrations])
    names = user_full_names_for_keys([r.user_id for r in registrations])
    usernames = user_names_for_keys([r.user_id for r in registrations])
    rows = []
    for registration in registrations:
        row = attendee_to_dict(registration, None, names.get(registration.user_id, ("", "")),
                               checkins.get(registration.registration_id))
        row["user"] = usernames.get(registration.user_id, row["user"])
        rows.append(door_row_to_dict(row, event_id=event_id, user_id=registration.user_id))
    return sorted(rows, key=lambda row: (row["last_name"].casefold(), row["first_name"].casefold(), row["user"]))


def door_list_page(*, event_id: str, cursor: str | None = None) -> Page[dict[str, Any]]:
    """A page of the whole list the door keeps for offline search: every registration of the event with its state,
    check-in, short code and ticket (DOOR_LIST_PAGE a page, see ``attendees.attendee_page``). Raises
    DomainError('invalid') for a cursor that is not this list's."""
    page = attendees.registration_page(event_id=event_id, cursor=cursor, limit=DOOR_LIST_PAGE)
    rows = attendees.attendee_rows(event_id=event_id, registrations=page.items)
    return Page(items=[door_row_to_dict(row, event_id=event_id, user_id=registration.user_id)
                       for row, registration in zip(rows, page.items, strict=True)], next_cursor=page.next_cursor)

