"""The staff's attendee list of an event: by name, a page at a time, searchable by username prefix; CSV export.

The event-side copy of every registration carries a sparse GSI1 key ``ATTENDEES#<event_id>#<b>`` /
``<name, case-folded>#<registration_id>``, written in the registration's own transaction, in the index partition
of the copy's bucket ``b`` (one of REGISTRATION_BUCKETS, see registrations.models). A page in name order is a
merge: one Query per bucket, each from the cursor on (an exclusive lower bound on the name key, so the cursor is
a position, not an offset) and at most ``limit`` items, then the ``limit`` smallest keys. A username prefix is a
key condition on every bucket (``begins_with``, or ``BETWEEN`` with the cursor), never a filter over the whole
event; the status filter is a FilterExpression, so a page may come back shorter than the limit (never longer,
never more read than ``limit`` items per bucket), and the cursor goes on from where it stopped.

Write cost (docs/registrations.md, "Attendee list"): each registration, promotion and cancellation also writes
the index entry, one more write unit on the index partition of its bucket.
"""

from __future__ import annotations

import csv
import heapq
import io
from collections.abc import Iterator
from typing import Any

from registrations.checkins.models import CheckIn, EventCheckins
from registrations.errors import RegistrationError
from registrations.events.models import Event
from registrations.models import CONFIRMED, OFFERED, REGISTRATION_BUCKETS, WAITLISTED, Registration
from registrations.offers.models import Offer
from registrations.questions import question_sets
from registrations.seating import positions
from registrations.seating.shards import SeatCounts
from registrations.serializers import attendee_to_dict
from tems.dynamo import batch_get_models
from tems.errors import DomainError
from tems.identity import user_full_names_for_keys
from tems.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, Page, decode_cursor, encode_cursor
from tems.templatetags.when import when_text

STATUSES = (CONFIRMED, OFFERED, WAITLISTED)
MAX_SEARCH_CHARS = 150  # a Django username is at most 150 characters
CSV_COLUMNS = ("registration_id", "user", "first_name", "last_name", "status", "position", "registered_at",
               "checked_in_at", "checked_in_door", "checked_in_by")
# Columns of moments: written as the pages show them (tems.templatetags.when), in the site's zone, 24-hour.
CSV_MOMENTS = ("registered_at", "checked_in_at")
# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection, OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# The cursor's name key: the index's sort key of the last item a page showed (or read, under a filter).
_CURSOR_KEY = "GSI1SK"
# DynamoDB orders strings by their UTF-8 bytes: nothing sorts between a key and the key followed by U+0000, and
# every key that begins with a prefix sorts at or below the prefix followed by the highest code point.
_RIGHT_AFTER = "\x00"
_HIGHEST = "\U0010ffff"
# A cursor's key is a name key (at most a 150-character name, case-folded) and a registration id.
_MAX_CURSOR_KEY_CHARS = 4 * MAX_SEARCH_CHARS + 64


def index_fields(*, event_id: str, name: str, registration_id: str) -> dict[str, str]:
    """The GSI1 attributes of a registration's event-side copy (its place in the attendee list)."""
    pk, sk = Registration.attendee_index_key_for(event_id, name, registration_id)
    return {"gsi1pk": pk, "gsi1sk": sk}


def _checked(status: str | None, search: str | None) -> tuple[str | None, str]:
    if status not in (None, "", *STATUSES):
        raise RegistrationError("invalid", f"status must be one of: {', '.join(STATUSES)}.",
                                errors={"status": ["Unknown status."]})
    search = (search or "").strip()
    if len(search) > MAX_SEARCH_CHARS:
        raise RegistrationError("invalid", f"A search is at most {MAX_SEARCH_CHARS} characters.",
                                errors={"q": ["Too long."]})
    return status or None, search


def attendee_page(*, event_id: str, status: str | None = None, search: str | None = None,
                  cursor: str | None = None, limit: int = DEFAULT_PAGE_SIZE) -> Page[dict[str, Any]]:
    """One page of the event's attendees in username order, each ``{registration_id, user, first_name, last_name,
    status, position, registered_at, answers, checked_in_at, checked_in_door, checked_in_by}`` (``position`` for
    the waitlisted). One Query per bucket (REGISTRATION_BUCKETS), one BatchGetItem of the waitlist counter nodes,
    one of the page's check-ins and one SQL query of the names; at most ``limit`` items read per bucket. Raises
    RegistrationError('invalid') for an unknown status or a too long search, and tems.errors.DomainError('invalid')
    for a cursor that is not this list's (the cursor is signed and scoped to the event, the status and the
    search).
    """
    page = registration_page(event_id=event_id, status=status, search=search, cursor=cursor, limit=limit)
    return Page(items=attendee_rows(event_id=event_id, registrations=page.items), next_cursor=page.next_cursor)


def registration_page(*, event_id: str, status: str | None = None, search: str | None = None,
                      cursor: str | None = None, limit: int = DEFAULT_PAGE_SIZE) -> Page[Registration]:
    """The event-side registration items of one page of ``attendee_page``, in its order (same reads, same
    errors, without the rows' own reads)."""
    status, search = _checked(status, search)
    prefix = Registration.attendee_name_key(search) if search else None
    scope = f"attendees:{event_id}:{status or ''}:{search}"
    after = _cursor_position(cursor, scope=scope, prefix=prefix)
    partitions = [Registration.attendees_pk_for(event_id, bucket) for bucket in range(REGISTRATION_BUCKETS)]
    condition = _key_condition(prefix=prefix, after=after)
    filter_condition = (Registration.status == status) if status else None
    found: list[tuple[str, Registration]] = []
    # The highest key up to which every bucket has been read: a bucket cut short by its limit (or by DynamoDB's
    # 1 MB) may hold unread keys just past where it stopped, so nothing beyond the lowest such stop is shown yet.
    read_up_to: str | None = None
    for partition in partitions:
        items, stopped_at = _bucket_page(partition, condition, filter_condition, limit)
        found.extend((item.gsi1sk, item) for item in items)
        if stopped_at is not None:
            read_up_to = stopped_at if read_up_to is None else min(read_up_to, stopped_at)
    candidates = heapq.nsmallest(limit + 1, (entry for entry in found if read_up_to is None or entry[0] <= read_up_to),
                                 key=lambda entry: entry[0])
    page = [item for _, item in candidates[:limit]]
    if len(candidates) > limit:
        next_key = candidates[limit - 1][0]  # the last key shown: more matches follow it
    else:
        # Every match up to where the buckets were read is shown: go on from there (None: all was read).
        next_key = read_up_to
    next_cursor = None if next_key is None else encode_cursor({_CURSOR_KEY: {"S": next_key}}, scope=scope)
    return Page(items=page, next_cursor=next_cursor)


def attendee_rows(*, event_id: str, registrations: list[Registration]) -> list[dict[str, Any]]:
    """The attendee rows of these registrations of the event: their waiting-list places (one BatchGetItem), their
    check-ins (one BatchGetItem) and their holders' names (one SQL query, see docs/privacy.md, "Names")."""
    places = positions.positions(tickets=[(r.event_id, int(r.ticket)) for r in registrations
                                         if r.status == WAITLISTED and r.ticket is not None])
    checkins = batch_get_models([(CheckIn, CheckIn.key_for(event_id, r.registration_id)) for r in registrations])
    by_registration = {checkin.registration_id: checkin for checkin in checkins}
    names = user_full_names_for_keys([r.user_id for r in registrations])
    return [attendee_to_dict(r, places.get((r.event_id, int(r.ticket))) if r.status == WAITLISTED and r.ticket
                             else None, names.get(r.user_id, ("", "")), by_registration.get(r.registration_id))
            for r in registrations]


def _cursor_position(cursor: str | None, *, scope: str, prefix: str | None) -> str | None:
    """The name key a cursor goes on after, or None for the first page; DomainError('invalid') if it is not one
    this list could have handed out (a cursor of the list before the buckets, a DynamoDB key, also names it)."""
    start = decode_cursor(cursor, scope=scope)
    if start is None:
        return None
    value = start.get(_CURSOR_KEY)
    if isinstance(value, dict):
        value = value.get("S")
    if (not isinstance(value, str) or not value or len(value) > _MAX_CURSOR_KEY_CHARS
            or (prefix is not None and not value.startswith(prefix))):
        raise DomainError("invalid", "This cursor is not valid: start again from the first page.")
    return value


def _key_condition(*, prefix: str | None, after: str | None):
    if prefix is not None and after is not None:
        return Registration.gsi1sk.between(after + _RIGHT_AFTER, prefix + _HIGHEST)
    if prefix is not None:
        return Registration.gsi1sk.startswith(prefix)
    if after is not None:
        return Registration.gsi1sk > after
    return None


def _bucket_page(partition: str, condition, filter_condition, limit: int) -> tuple[list[Registration], str | None]:
    """One Query of one index partition: its matching items, and the key it stopped at if it was cut short.

    One request exactly (PynamoDB's item iterator would fetch more pages to fill ``limit`` under a filter)."""
    results = Registration.attendees.query(partition, condition, filter_condition=filter_condition, limit=limit)
    page = next(results.page_iter)
    items = [Registration.from_raw_data(raw) for raw in page.get("Items", [])]
    stopped_at = (page.get("LastEvaluatedKey") or {}).get(_CURSOR_KEY, {}).get("S")
    return items, stopped_at


def attendee_totals(*, event: Event, seats: SeatCounts) -> dict[str, int]:
    """``{confirmed, offered, waiting, checked_in}`` of an event and its seats as ``seat_counts`` read them.

    A seat offered from the waiting list is taken until the offer ends, so the confirmed are the taken seats less
    the open offers. Two more requests: the door's counter (GetItem) and a count of the site's open offers (a
    Query of the offers' index partition, which holds open offers only, filtered to the event: bounded by the
    offers open now, not by the event's size).
    """
    try:
        checked_in = EventCheckins.get(*EventCheckins.key_for(event.event_id), consistent_read=True).checked_in_count
    except EventCheckins.DoesNotExist:
        checked_in = 0
    offered = Offer.by_end.count(Offer.COLLECTION, filter_condition=Offer.event_id == event.event_id)
    return {"confirmed": max(seats.registered - offered, 0), "offered": offered,
            "waiting": seats.waiting, "checked_in": int(checked_in or 0)}


def safe_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: a leading ' before anything it would run as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def attendee_csv(*, event_id: str, status: str | None = None, search: str | None = None,
                 asked: question_sets.QuestionSet = question_sets.NO_QUESTIONS) -> Iterator[str]:
    """The whole attendee list as CSV lines, read and sent one page at a time (memory does not grow).

    One column per question of ``asked`` (the event's questions now), then, if any were asked, one column of
    the answers to questions no longer asked (as "label: answer"), so an edit of the questions hides no answer.
    """
    status, search = _checked(status, search)
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(values: list[object]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([safe_cell(value) for value in values])
        return buffer.getvalue()

    columns = [q.label for q in asked.questions] + (["other answers"] if asked.version else [])
    yield line([*CSV_COLUMNS, *columns])
    cursor = None
    while True:
        page = attendee_page(event_id=event_id, status=status, search=search, cursor=cursor, limit=MAX_PAGE_SIZE)
        for row in page.items:
            cells = [when_text(row[column]) if column in CSV_MOMENTS else row[column] for column in CSV_COLUMNS]
            yield line([*cells, *_answer_cells(row["answers"], asked)])
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _answer_cells(answers: list[dict], asked: question_sets.QuestionSet) -> list[str]:
    if not asked.version:
        return []
    by_id = {answer.get("id"): answer for answer in answers if isinstance(answer, dict)}
    cells = [question_sets.answer_text(by_id.pop(q.id, {}).get("value")) for q in asked.questions]
    other = "; ".join(f"{a.get('label')}: {question_sets.answer_text(a.get('value'))}" for a in by_id.values())
    return [*cells, other]
