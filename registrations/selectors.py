"""Reads of the registrations app."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from registrations.errors import RegistrationError
from registrations.events.models import Event, EventSeats
from registrations.messages.models import EventMessage, MessageCopy
from registrations.models import (
    CANCELLED,
    CONFIRMED,
    REGISTRATION_BUCKETS,
    WAITLISTED,
    Registration,
    RegistrationClaim,
    WaitlistEntry,
)
from registrations.offers.models import Offer
from registrations.seating import positions, shards
from registrations.seating.gate import gate_get
from registrations.seating.hints import hints
from registrations.seating.models import SeatGate, SeatShard
from registrations.seating.shards import SeatCounts
from registrations.serializers import my_registration_to_dict, stored_registration_to_dict
from registrations.ticket_tokens import ticket_url
from tems.clock import utcnow
from tems.dynamo import batch_get_models
from tems.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, Page, decode_cursor, query_page, start_key_string
from tems.permissions import NoSuchObject


def event_get(*, event_id: str, consistent: bool = True) -> Event:
    """The event, read strongly consistently by default (an edit form must show the latest version); its seats
    are ``seat_counts``'s."""
    try:
        return Event.get(*Event.key_for(event_id), consistent_read=consistent)
    except Event.DoesNotExist:
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None


def seat_counts(*, events: Iterable[Event]) -> dict[str, SeatCounts]:
    """``{event_id: SeatCounts}`` of the events: one BatchGetItem of their seat shards, whatever their number."""
    return shards.seat_counts(events=events)


def seats_for(*, event: Event) -> SeatCounts:
    """The one event's ``SeatCounts`` (one BatchGetItem of its shards)."""
    return seat_counts(events=[event])[event.event_id]


def event_team(event_id: str) -> str | None:
    """The id of the team that organizes the event (None: no team, platform admins only); for tems.permissions,
    which raises NoSuchObject for an unknown event. Consistent: a page opened right after the creation must
    find it."""
    try:
        event = Event.get(*Event.key_for(event_id), consistent_read=True, attributes_to_get=["team"])
    except Event.DoesNotExist:
        raise NoSuchObject(event_id) from None
    return event.team


def event_list(*, now: datetime | None = None) -> tuple[list[Event], list[Event]]:
    """(upcoming events, soonest first; past events, most recent first) from the start-time index."""
    cutoff = Event.listing_key(now or utcnow(), "")
    events = list(Event.by_start.query(Event.COLLECTION))
    upcoming = [event for event in events if event.gsi1sk >= cutoff]
    past = [event for event in reversed(events) if event.gsi1sk < cutoff]
    return upcoming, past


def event_page(*, past: bool = False, cursor: str | None = None, limit: int,
               now: datetime | None = None) -> Page[Event]:
    """One page of upcoming events (soonest first) or, with ``past``, of past events (most recent first).

    One Query whatever the number of events: the key condition on GSI1SK starts at "now", so the other half of
    the collection is never read. The two lists have their own cursor scopes, so a cursor of one cannot page
    the other.
    """
    scope = "events:past" if past else "events:upcoming"
    cutoff = Event.listing_key(now or utcnow(), "")
    if not past and (start := decode_cursor(cursor, scope=scope)) is not None:
        # A later page goes on from where the first one started: DynamoDB refuses a start key outside the key
        # condition, and the last event of the page before may have started since (it was upcoming then).
        cutoff = min(cutoff, start_key_string(start, "GSI1SK"))
    condition = Event.gsi1sk < cutoff if past else Event.gsi1sk >= cutoff
    page = query_page(Event.by_start.query, Event.COLLECTION, condition, scope=scope, cursor=cursor, limit=limit,
                      scan_index_forward=not past)
    return page


# --- registrations ------------------------------------------------------------------------------------------

def registration_ticket_url(*, user_id: str, registration_id: str) -> str:
    """The ticket URL of the caller's live registration (one GetItem). RegistrationError('not_found') for anyone
    else's, and for a cancelled one (it has no ticket any more)."""
    registration = registration_get(user_id=user_id, registration_id=registration_id)
    if registration.status == CANCELLED:
        raise RegistrationError("not_found", "That registration is cancelled: it has no ticket.")
    return ticket_url(event_id=registration.event_id, registration_id=registration.registration_id,
                      user_id=registration.user_id)


def claim_get(*, event_id: str, user_id: str) -> RegistrationClaim | None:
    """The student's live registration for the event (one GetItem by exact key), or None."""
    try:
        return RegistrationClaim.get(*RegistrationClaim.key_for(event_id, user_id), consistent_read=True)
    except RegistrationClaim.DoesNotExist:
        return None


def event_registrations(*, event_id: str, consistent: bool = True) -> Iterator[Registration]:
    """Every event-side registration copy of the event: each of its REGISTRATION_BUCKETS partitions in turn, a
    Query page at a time, so memory does not grow with the event (in no particular order; the attendee list is
    the ordered read), then the waitlist entries that are their registration's copy, read as registrations
    (keyed as the entries are). The one read of "all registrations of an event": tools, clean-up and checks,
    never a page."""
    for pk in [Registration.event_pk_for(event_id, bucket) for bucket in range(REGISTRATION_BUCKETS)]:
        yield from Registration.query(pk, Registration.sk.startswith(Registration.SK_PREFIX),
                                      consistent_read=consistent)
    try:
        lanes = shards.ticket_lanes(int(EventSeats.get(*EventSeats.key_for(event_id),
                                                     consistent_read=consistent).seat_shards or 0))
    except EventSeats.DoesNotExist:
        # A lab event's TTL removes the event item alone; its gate, born in the same transaction as its lanes,
        # stays and names them. No gate: the event was never made, so it has no lanes either.
        gate = gate_get(event_id=event_id)
        lanes = shards.ticket_lanes(int(gate.shards)) if gate is not None else 0
    for lane in range(lanes):
        yield from Registration.query(WaitlistEntry.lane_pk_for(event_id, lane),
                                      Registration.sk.startswith(WaitlistEntry.SK_PREFIX),
                                      filter_condition=Registration.status.exists(), consistent_read=consistent)


def registration_get(*, user_id: str, registration_id: str) -> Registration:
    """The caller's own registration; RegistrationError('not_found') for anyone else's (keys are per user)."""
    try:
        return Registration.get(*Registration.user_key_for(user_id, registration_id), consistent_read=True)
    except Registration.DoesNotExist:
        raise RegistrationError("not_found", f"You have no registration with id {registration_id!r}.") from None


def waitlist_head(*, event_id: str) -> WaitlistEntry | None:
    """The first entry of the event's waiting list (smallest ticket over its lanes), read strongly consistently."""
    heads = waitlist_heads(event_id=event_id, limit=1)
    return heads[0] if heads else None


def waitlist_lanes(*, event_id: str) -> tuple[EventSeats | None, list[SeatShard]]:
    """The event's seat counters and its shards (the waiting list's lanes), strongly consistent: None, [] if there
    is no such event."""
    try:
        event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    except EventSeats.DoesNotExist:
        return None, []
    return event, shards.shards_get(event_id=event_id, count=int(event.seat_shards or 0))


def waitlist_lanes_and_gate(*, event_id: str) -> tuple[EventSeats | None, SeatGate | None, list[SeatShard]]:
    """``waitlist_lanes`` and the event's gate (None when there is no such event), strongly consistent: the gate
    comes in the lanes' BatchGetItem."""
    try:
        event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    except EventSeats.DoesNotExist:
        return None, None, []
    count = int(event.seat_shards or 0)
    items = batch_get_models([(SeatGate, SeatGate.key_for(event_id)),
                              *((SeatShard, SeatShard.key_for(event_id, k)) for k in range(count))])
    gate = next((item for item in items if isinstance(item, SeatGate)), None)
    lanes = sorted((item for item in items if isinstance(item, SeatShard)), key=lambda lane: int(lane.shard))
    return event, gate, lanes


def waitlist_heads(*, event_id: str, limit: int,
                   lanes: tuple[EventSeats | None, list[SeatShard]] | None = None) -> list[WaitlistEntry]:
    """The first ``limit`` entries of the event's waiting list in ticket order, read strongly consistently: the
    lanes (one BatchGetItem, or ``lanes`` as the caller read them), then one Query of at most ``limit`` entries
    per lane with someone waiting, merged."""
    event, lanes_read = lanes if lanes is not None else waitlist_lanes(event_id=event_id)
    if event is None:
        return []
    # Lanes by floor (seating.hints; a lane never read first): once ``limit`` entries are found below the next
    # lane's floor, no lane from there on can hold one of the first ``limit``.
    floors = hints.lane_floors(event_id)
    waiting = sorted((int(lane.shard) for lane in lanes_read if lane.waiting), key=lambda s: floors.get(s, -1))
    found: list[WaitlistEntry] = []
    for lane in waiting:
        if len(found) >= limit and lane in floors and int(found[limit - 1].ticket) < floors[lane]:
            break
        entries = list(itertools.islice(WaitlistEntry.query(
            WaitlistEntry.lane_pk_for(event_id, lane), WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX),
            consistent_read=True, limit=limit), limit))
        if entries:
            hints.raise_lane_floor(event_id, lane, int(entries[0].ticket))
        found = sorted([*found, *entries], key=lambda entry: int(entry.ticket))[:limit]
    return found


def waitlist_position(*, event_id: str, ticket: int) -> int:
    """1 for the head of the queue: BatchGetItems of at most five counter nodes and the lanes
    (registrations.seating.positions)."""
    return positions.position(event_id=event_id, ticket=ticket)


def waitlist_entries(*, event_id: str) -> list[WaitlistEntry]:
    """The whole waiting list, head first."""
    event, lanes_read = waitlist_lanes(event_id=event_id)
    if event is None:
        return []
    lanes = [int(lane.shard) for lane in lanes_read]
    entries = [entry for lane in lanes for entry in WaitlistEntry.query(
        WaitlistEntry.lane_pk_for(event_id, lane), WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX),
        consistent_read=True)]
    return sorted(entries, key=lambda entry: int(entry.ticket))


def registration_view(*, registration: Registration | RegistrationClaim) -> dict[str, Any]:
    """``serializers.registration_to_dict`` of a stored registration, with its waitlist position as of now."""
    position = None
    if registration.status == WAITLISTED and registration.ticket is not None:
        position = waitlist_position(event_id=registration.event_id, ticket=int(registration.ticket))
    return stored_registration_to_dict(registration, position)


def _waiting_tickets(registrations: list[Registration]) -> list[tuple[str, int]]:
    return [(r.event_id, int(r.ticket)) for r in registrations if r.status == WAITLISTED and r.ticket is not None]


def _with_positions(registrations: list[Registration], *,
                    shard_counts: dict[str, int] | None = None) -> list[tuple[Registration, int | None]]:
    """Each registration with its waitlist position: BatchGetItems for the whole page, not one per row."""
    places = positions.positions(tickets=_waiting_tickets(registrations), shard_counts=shard_counts)
    return [(r, places.get((r.event_id, int(r.ticket))) if r.status == WAITLISTED and r.ticket is not None
             else None) for r in registrations]


def registration_page(*, user_id: str, cursor: str | None = None, limit: int = DEFAULT_PAGE_SIZE,
                      checked_in: Callable[..., set[str]] | None = None) -> Page[dict[str, Any]]:
    """One page of the caller's registrations, newest first, each with its event's title and start; never one for a
    scratch event (``Event.SCRATCH_PREFIX``: the lab's try-it event registers the signed-in person).

    Three requests whatever the student holds: one Query of ``limit`` registrations, one BatchGetItem of
    their events and one of the waitlist counter nodes (positions); a page of 50 waitlisted ones needs at most
    250 nodes, so up to three BatchGetItems there. ``checked_in`` (the door's ``checked_in_registrations``,
    handed in by the pages, as the read layer stands below the door) tells which seats were scanned in; it
    reads only for events where someone is checked in. Registration ids begin with their creation time, so the
    key order is newest first (registrations made before that id scheme sort among them by their random id).
    The cursor is scoped to the student: nobody can page through someone else's list with it.
    """
    page = _own_registrations(user_id=user_id, cursor=cursor, limit=limit)
    found = _with_events(page.items)
    seats = [(event, registration.registration_id) for registration, _, event in found
             if event is not None and registration.status == CONFIRMED]
    used = checked_in(registrations=seats) if checked_in else set()
    rows = [my_registration_to_dict(registration, position, event,
                                    checked_in=registration.registration_id in used)
            for registration, position, event in found]
    return Page(items=rows, next_cursor=page.next_cursor)


def _own_registrations(*, user_id: str, cursor: str | None, limit: int) -> Page[Registration]:
    return query_page(
        Registration.query, Registration.user_pk_for(user_id), Registration.sk.startswith(Registration.SK_PREFIX),
        scope=f"my-registrations:{user_id}", cursor=cursor, limit=limit, consistent_read=True,
        scan_index_forward=False,
        # A filter, applied after the ``limit`` items are read: a page holding scratch registrations comes back
        # shorter, never costs more (a person has at most the one try-it event's).
        filter_condition=~Registration.event_id.startswith(Event.SCRATCH_PREFIX),
    )


def _with_events(registrations: list[Registration]) -> list[tuple[Registration, int | None, Event | None]]:
    """Each registration with its waitlist position and its event (None if gone): one BatchGetItem of the events
    and the positions' reads, for the whole page."""
    event_ids = {r.event_id for r in registrations}
    events = {e.event_id: e for e in Event.batch_get([Event.key_for(event_id) for event_id in sorted(event_ids)])}
    shard_counts = {event_id: int(event.seat_shards or 0) for event_id, event in events.items()}
    return [(registration, position, events.get(registration.event_id))
            for registration, position in _with_positions(registrations, shard_counts=shard_counts)]


# A student's calendar feed holds at most this many registrations, newest first: a calendar app polls it for
# ever, so each poll's reads must stay bounded (four pages of the student's own partition, as My registrations
# reads them) however many registrations pile up over the years.
FEED_MAX_PAGES = 4


def registration_feed(*, user_id: str) -> list[tuple[Registration, int | None, Event]]:
    """The student's newest registrations (at most FEED_MAX_PAGES pages of MAX_PAGE_SIZE) whose event still
    exists, each with its waitlist position and its event: what the calendar feed lists."""
    found: list[tuple[Registration, int | None, Event]] = []
    cursor = None
    for _ in range(FEED_MAX_PAGES):
        page = _own_registrations(user_id=user_id, cursor=cursor, limit=MAX_PAGE_SIZE)
        found.extend((r, position, event) for r, position, event in _with_events(page.items) if event is not None)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    return found


def offer_get(*, user_id: str, registration_id: str) -> Offer:
    """The student's offer (open or how it ended); RegistrationError('not_found') for anyone else's."""
    try:
        return Offer.get(*Offer.key_for(user_id, registration_id), consistent_read=True)
    except Offer.DoesNotExist:
        raise RegistrationError("not_found", f"You have no offer with id {registration_id!r}.") from None


def registration_list(*, user_id: str) -> list[dict[str, Any]]:
    """Every registration of the student, page after page (for tests and tools; pages and the API page)."""
    listed: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = registration_page(user_id=user_id, cursor=cursor, limit=MAX_PAGE_SIZE)
        listed.extend(page.items)
        if page.next_cursor is None:
            return listed
        cursor = page.next_cursor


# --- staff messages and reminders -----------------------------------------------------------------------------

def message_get(*, event_id: str, message_id: str) -> EventMessage:
    try:
        return EventMessage.get(*EventMessage.key_for(event_id, message_id), consistent_read=True)
    except EventMessage.DoesNotExist:
        raise RegistrationError("not_found", f"There is no message {message_id!r} for this event.") from None


# How many of an event's messages its page shows a person: the newest; a handful is all an event sends.
MESSAGES_SHOWN = 10


def messages_to(*, user_id: str, event_id: str, limit: int = MESSAGES_SHOWN) -> list[EventMessage]:
    """The event's messages, reminders and cancellation notice addressed to this person, newest first: one Query
    of their copies (at most ``limit``) and one BatchGetItem of the messages; nobody else's is read."""
    copies = MessageCopy.query(MessageCopy.pk_for(user_id),
                               MessageCopy.sk.startswith(MessageCopy.event_prefix(event_id)),
                               scan_index_forward=False, limit=limit)
    keys = [EventMessage.key_for(copy.event_id, copy.message_id) for copy in itertools.islice(copies, limit)]
    if not keys:
        return []
    found = batch_get_models([(EventMessage, key) for key in keys], consistent_read=False)
    return sorted(found, key=lambda message: (message.created_at, message.message_id), reverse=True)


def message_list(*, event_id: str, cursor: str | None = None, limit: int = DEFAULT_PAGE_SIZE) -> Page[EventMessage]:
    """One page of the event's messages, reminders and cancellation notice, newest first: one Query of the
    event's message list (GSI1, sorted by when each was written), read backwards."""
    return query_page(EventMessage.listing.query, EventMessage.list_pk_for(event_id), scope=f"messages:{event_id}",
                      cursor=cursor, limit=limit, scan_index_forward=False)
