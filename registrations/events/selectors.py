"""Finding events: a search with filters that combine, a page at a time, and a month of them for the calendar.

Every page is one Query of at most ``limit`` items of one list, one BatchGetItem of the page's events and one of
their seat shards, however many events there are (docs/registrations.md, "Finding events"). The list read is the
narrowest the filters name: a word of the search (the longest, the likeliest to be rare), else the category,
else the organizer, else the public events, else all of them by start time (GSI1). The other filters are checked
on the entries of that one list as they are read (each entry carries them), so a page can come back with fewer
than ``limit`` events and a cursor for more; it never reads a second list or the whole table.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, replace
from datetime import date, datetime, time, timedelta

from django.utils import timezone

from registrations.events import index
from registrations.events.models import Event, EventFacet
from registrations.seating import shards
from registrations.seating.shards import SeatCounts
from registrations.statuses import CardStatus, card_statuses
from tems.clock import utcnow
from tems.pagination import Page, decode_cursor, query_filtered_page, start_key_string
from tems.teams.selectors import team_names

ONLINE = "online"
IN_PERSON = "in_person"
MODES = ((ONLINE, "Online"), (IN_PERSON, "In person"))
# The words of a search that are looked up: one list is read, the others are checked on its entries.
MAX_SEARCH_WORDS = index.MAX_WORDS
# A month on the calendar is one page this long: a busier month says so and links to the list.
MONTH_LIMIT = 120


@dataclass(frozen=True)
class EventFilters:
    """What a list of events is narrowed to; every field optional. ``starts_before`` is exclusive."""

    text: str = ""
    starts_from: datetime | None = None
    starts_before: datetime | None = None
    category: str | None = None
    organizer: str | None = None
    free_seats: bool = False
    mode: str | None = None
    public_only: bool = False

    @property
    def words(self) -> list[str]:
        return index.words_of(self.text, limit=MAX_SEARCH_WORDS)

    @property
    def organizer_key(self) -> str:
        return index.organizer_key(self.organizer)

    def scope(self) -> str:
        """A cursor's list: the same filters, so a cursor of one search cannot page another."""
        described = repr(sorted((name, str(value)) for name, value in asdict(self).items()))
        return "events:search:" + hashlib.sha256(described.encode()).hexdigest()[:24]


def _driving_facet(filters: EventFilters) -> str | None:
    if filters.words:
        return EventFacet.word(max(filters.words, key=len))
    if filters.category:
        return EventFacet.of_category(filters.category)
    if filters.organizer_key:
        return EventFacet.of_organizer(filters.organizer_key)
    if filters.public_only:
        return EventFacet.PUBLIC
    return None


def _facet_condition(filters: EventFilters, facet: str):
    """What the entries of the list read must also have; None when the list alone is the answer."""
    checks = [EventFacet.words.contains(word) for word in filters.words if EventFacet.word(word) != facet]
    if filters.category and facet != EventFacet.of_category(filters.category):
        checks.append(EventFacet.category == filters.category)
    if filters.organizer_key and facet != EventFacet.of_organizer(filters.organizer_key):
        checks.append(EventFacet.organizer == filters.organizer_key)
    if filters.public_only and facet != EventFacet.PUBLIC:
        checks.append(EventFacet.public == True)  # noqa: E712 - a PynamoDB condition, not a comparison
    if filters.mode == ONLINE:
        checks.append(EventFacet.online == True)  # noqa: E712
    elif filters.mode == IN_PERSON:
        checks.append(EventFacet.in_person == True)  # noqa: E712
    return _all(checks)


def _event_condition(filters: EventFilters):
    checks = []
    if filters.mode == ONLINE:
        checks.append(Event.online_url.exists())
    elif filters.mode == IN_PERSON:
        checks.append(Event.location.exists() & (Event.location != ""))
    return _all(checks)


def _all(checks: list):
    condition = None
    for check in checks:
        condition = check if condition is None else condition & check
    return condition


def _range(filters: EventFilters, cursor_start: dict | None, now: datetime) -> tuple[str, str]:
    lower = Event.listing_key(filters.starts_from or now, "")
    if cursor_start is not None:
        # A later page goes on from where the first started: "now" may have moved past the cursor's key, and
        # DynamoDB refuses a start key outside the key condition.
        lower = min(lower, start_key_string(cursor_start, "GSI1SK"))
    # Past any listing key: the year 9999 is the last a start can have (tems.forms.UtcDateTimeField).
    upper = Event.listing_key(filters.starts_before, "") if filters.starts_before else "9999-99"
    return lower, upper


def event_search(*, filters: EventFilters, cursor: str | None = None, limit: int,
                 now: datetime | None = None) -> tuple[Page[Event], dict[str, SeatCounts]]:
    """One page of the events that match ``filters``, soonest first, from ``starts_from`` (default: now), and
    their seats (``seat_counts``: "has free seats" is decided on them, and the cards show them).

    Raises RegistrationError('invalid') for a cursor of another search or a tampered one (tems.pagination)."""
    now = now or utcnow()
    scope = filters.scope()
    lower, upper = _range(filters, decode_cursor(cursor, scope=scope), now)
    facet = _driving_facet(filters)
    if facet is None:
        page = query_filtered_page(Event.by_start.query, Event.COLLECTION, Event.gsi1sk.between(lower, upper),
                                   model=Event, scope=scope, cursor=cursor, limit=limit,
                                   filter_condition=_event_condition(filters))
        events = page.items
    else:
        entries = query_filtered_page(EventFacet.listing.query, EventFacet.list_pk_for(facet),
                                      EventFacet.gsi1sk.between(lower, upper), model=EventFacet, scope=scope,
                                      cursor=cursor, limit=limit, filter_condition=_facet_condition(filters, facet))
        events = _events(entry.event_id for entry in entries)
        page = Page(items=events, next_cursor=entries.next_cursor)
    seats = shards.seat_counts(events=events)  # one BatchGetItem for the shards of the whole page
    if filters.free_seats:
        events = [event for event in events if not seats[event.event_id].joins_waitlist and not event.is_cancelled]
    return Page(items=events, next_cursor=page.next_cursor), seats


def _events(event_ids) -> list[Event]:
    """The page's events in the entries' order (one BatchGetItem; an event deleted meanwhile is left out)."""
    ids = list(dict.fromkeys(event_ids))
    if not ids:
        return []
    found = {event.event_id: event for event in Event.batch_get([Event.key_for(event_id) for event_id in ids])}
    return [found[event_id] for event_id in ids if event_id in found]


def event_month(*, filters: EventFilters, year: int, month: int, limit: int = MONTH_LIMIT,
                ) -> tuple[list[Event], dict[str, SeatCounts], bool]:
    """The month's events that match ``filters`` (the site's days), soonest first, as one page of at most
    ``limit`` entries, their seats, and whether there are more than that page holds."""
    zone = timezone.get_default_timezone()
    first = date(year, month, 1)
    following = (first + timedelta(days=31)).replace(day=1)
    month_filters = replace(filters, starts_from=datetime.combine(first, time(), tzinfo=zone),
                            starts_before=datetime.combine(following, time(), tzinfo=zone))
    page, seats = event_search(filters=month_filters, limit=limit)
    return page.items, seats, page.next_cursor is not None


@dataclass(frozen=True)
class EventCard:
    """An event as a list's card shows it: its seats, its organizing team's name and the student's pill."""

    event: Event
    seats: SeatCounts
    team_name: str | None = None
    status: CardStatus | None = None  # None: no pill (no standing to show, or nobody to show it to)


def event_cards(*, events: list[Event], seats: dict[str, SeatCounts], user_id: str | None = None) -> list[EventCard]:
    """The cards of a page of ``events``, in its order (``seats`` as ``seat_counts`` read them for the page). The
    pills are ``user_id``'s standings (``card_statuses``: one BatchGetItem for the page); None shows none, as to a
    visitor or on the past events."""
    statuses = card_statuses(user_id=user_id, events=events, seats=seats) if user_id is not None else {}
    names = team_names(event.team for event in events)
    return [EventCard(event=event, seats=seats[event.event_id], team_name=names.get(event.team),
                      status=statuses.get(event.event_id)) for event in events]
