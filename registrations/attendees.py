"""The staff's attendee list of an event: by name, a page at a time, searchable by username prefix; CSV export.

The event-side copy of every registration carries a sparse GSI1 key ``ATTENDEES#<event_id>`` /
``<name, case-folded>#<registration_id>``, written in the registration's own transaction. So the list is one
Query of one page in name order, and a username prefix is a key condition (``begins_with``), never a filter over
the whole event. The status filter is a FilterExpression on that Query: a page may come back shorter than the
limit (never longer, never more read than ``limit`` items), and the cursor goes on from where it stopped.

Write cost (docs/registrations.md, "Attendee list"): each registration, promotion and cancellation also writes
the index entry, one more write unit on the index partition of its event, the one hot partition this adds.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

from pynamodb.exceptions import UpdateError

from registrations import waitlist
from registrations.errors import RegistrationError
from registrations.models import CONFIRMED, WAITLISTED, Event, Registration
from tems.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, Page, query_page

STATUSES = (CONFIRMED, WAITLISTED)
MAX_SEARCH_CHARS = 150  # a Django username is at most 150 characters
CSV_COLUMNS = ("registration_id", "user", "status", "position", "registered_at")
# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection, OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


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
    """One page of the event's attendees in name order, each ``{registration_id, user, status, position,
    registered_at}`` (``position`` for the waitlisted). Two requests: the Query and one BatchGetItem of the
    waitlist counter nodes. Raises RegistrationError('invalid') for an unknown status, a too long search or a
    cursor of another list (the cursor is scoped to the event, the status and the search).
    """
    status, search = _checked(status, search)
    pk = Registration.attendees_pk_for(event_id)
    key_condition = Registration.gsi1sk.startswith(Registration.attendee_name_key(search)) if search else None
    # A bad cursor is tems.errors.DomainError('invalid'): a 400 / a message, like every list's.
    page = query_page(
        Registration.attendees.query, pk, key_condition,
        scope=f"attendees:{event_id}:{status or ''}:{search}", cursor=cursor, limit=limit,
        filter_condition=(Registration.status == status) if status else None,
    )
    positions = waitlist.positions(tickets=[(r.event_id, int(r.ticket)) for r in page.items
                                            if r.status == WAITLISTED and r.ticket is not None])
    rows = [{
        "registration_id": r.registration_id,
        "user": r.user_name or r.user_id,
        "status": r.status,
        "position": positions.get((r.event_id, int(r.ticket))) if r.status == WAITLISTED and r.ticket else None,
        "registered_at": r.created_at.isoformat(),
    } for r in page.items]
    return Page(items=rows, next_cursor=page.next_cursor)


def safe_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: a leading ' before anything it would run as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def attendee_csv(*, event_id: str, status: str | None = None, search: str | None = None) -> Iterator[str]:
    """The whole attendee list as CSV lines, read and sent one page at a time (memory does not grow)."""
    status, search = _checked(status, search)
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(values: list[object]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([safe_cell(value) for value in values])
        return buffer.getvalue()

    yield line(list(CSV_COLUMNS))
    cursor = None
    while True:
        page = attendee_page(event_id=event_id, status=status, search=search, cursor=cursor, limit=MAX_PAGE_SIZE)
        for row in page.items:
            yield line([row[column] for column in CSV_COLUMNS])
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def backfill_index(*, event_id: str) -> int:
    """Give the event-side registrations written before the attendee list their index key; returns how many.

    Each is one conditional update (the copy still exists and has no key yet), so running it twice, or while
    students register and cancel, changes nothing twice and resurrects nothing.
    """
    updated = 0
    for registration in Registration.query(Event.pk_for(event_id), Registration.sk.startswith(Registration.SK_PREFIX),
                                           filter_condition=Registration.gsi1pk.does_not_exist()):
        fields = index_fields(event_id=event_id, name=registration.user_name or registration.user_id,
                              registration_id=registration.registration_id)
        try:
            registration.update(actions=[Registration.gsi1pk.set(fields["gsi1pk"]),
                                         Registration.gsi1sk.set(fields["gsi1sk"])],
                                condition=Registration.pk.exists() & Registration.gsi1pk.does_not_exist())
        except UpdateError:
            continue  # cancelled meanwhile, or done by a concurrent run
        updated += 1
    return updated
