"""Calendar entries of registrations: the "Add to calendar" file of one, the student's subscription feed of all
of them, and the Google and Outlook "add" links; each VEVENT built with the maintained ``icalendar`` library.

An entry says what ``statuses.registration_standing`` says: a seat is CONFIRMED, a place in line or an open offer
TENTATIVE (the title never carries a place, which would be stale the moment someone leaves), a cancellation by
the student or the organisers CANCELLED.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from django.conf import settings
from django.urls import reverse
from icalendar import Calendar
from icalendar import Event as CalendarEvent

from registrations.events.models import Event
from registrations.statuses import Standing, waiting_rule

# TEMS stores a start only; calendars need an end. Two hours covers a talk or a club night; the event page says
# what it really is.
ASSUMED_DURATION = timedelta(hours=2)

PRODID = "-//TEMS//University events//EN"


def event_ends(event: Event) -> datetime:
    """When the event ends, as calendars are told: its end, or ``ASSUMED_DURATION`` after the start when staff gave
    none (a calendar entry needs an end)."""
    return event.ends_at or event.starts_at + ASSUMED_DURATION


def sequence_of(event: Event) -> int:
    """The entry's SEQUENCE: it must grow with every change a calendar should take over. Each edit raises the
    event's version; the cancellation does not (it is not an edit, and nothing edits a cancelled event), so it
    counts one more."""
    return int(event.version or 0) + (1 if event.is_cancelled else 0)


def event_page_url(event: Event) -> str:
    return settings.TEMS_PUBLIC_URL + reverse("registrations:event_detail", kwargs={"event_id": event.event_id})


@dataclass(frozen=True)
class Entry:
    """One registration as a calendar entry: its id, its event and its standing (``registration_standing``)."""

    registration_id: str
    event: Event
    standing: Standing
    ticket_url: str

    @property
    def sequence(self) -> int:
        return sequence_of(self.event)


def _summary(entry: Entry) -> str:
    title = entry.event.title
    if entry.standing.calendar_status == "CANCELLED":
        return f"Cancelled: {title}"
    if entry.standing.kind == "offered":
        return f"{title} (seat offered, not accepted yet)"
    if entry.standing.calendar_status == "TENTATIVE":
        return f"{title} (waiting list)"
    return title


def _description(entry: Entry) -> str:
    page = event_page_url(entry.event)
    if entry.standing.shows_ticket:
        return f"Event page: {page}\nYour ticket: {entry.ticket_url}"
    if entry.standing.kind == "waitlisted":
        return f"Event page: {page}\nYou are on the waiting list. {waiting_rule(entry.event)}"
    return f"Event page: {page}\n{entry.standing.detail}"


def _vevent(entry: Entry, *, stamp: datetime) -> CalendarEvent:
    event = entry.event
    zone = ZoneInfo(event.time_zone or settings.TIME_ZONE)
    vevent = CalendarEvent()
    # The registration's UID: importing a file twice, or a feed refreshing, updates one entry instead of adding.
    vevent.add("uid", f"registration-{entry.registration_id}@tems")
    vevent.add("dtstamp", stamp)
    vevent.add("sequence", entry.sequence)
    vevent.add("status", entry.standing.calendar_status)
    vevent.add("dtstart", event.starts_at.astimezone(zone))
    vevent.add("dtend", event_ends(event).astimezone(zone))
    vevent.add("summary", _summary(entry))
    if event.location:
        vevent.add("location", event.location)
    vevent.add("url", entry.ticket_url if entry.standing.shows_ticket else event_page_url(event))
    vevent.add("description", _description(entry))
    return vevent


def calendar_ics(entries: Iterable[Entry], *, stamp: datetime, name: str | None = None) -> bytes:
    """An iCalendar document of ``entries``.

    SEQUENCE (``Entry.sequence``) tells a calendar which copy is newer, so a cancelled event's entry
    (``STATUS:CANCELLED``) replaces the old one instead of being ignored. The start and end carry the event's time
    zone (TZID, with its VTIMEZONE), so a calendar shows them at the wall-clock time the event page does;
    DTSTAMP stays in UTC, as RFC 5545 requires.
    """
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    if name:
        calendar.add("x-wr-calname", name)
    for entry in entries:
        calendar.add_component(_vevent(entry, stamp=stamp))
    calendar.add_missing_timezones()
    return calendar.to_ical()


def _utc_stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def calendar_add_links(*, event_id: str, title: str, starts_at: datetime, ends_at: datetime,
                       location: str, time_zone: str | None = None) -> dict[str, str]:
    """``{"google_url", "outlook_url"}``: Google Calendar's and Outlook on the web's "add" pages for the event,
    filled in (Google's documented ``render?action=TEMPLATE`` link, Outlook's ``deeplink/compose``)."""
    page = settings.TEMS_PUBLIC_URL + reverse("registrations:event_detail", kwargs={"event_id": event_id})
    google = urlencode({"action": "TEMPLATE", "text": title,
                        "dates": f"{_utc_stamp(starts_at)}/{_utc_stamp(ends_at)}",
                        "details": f"Event page: {page}", "location": location or "",
                        "ctz": time_zone or settings.TIME_ZONE})
    outlook = urlencode({"path": "/calendar/action/compose", "rru": "addevent", "subject": title,
                         "startdt": starts_at.astimezone(UTC).isoformat(),
                         "enddt": ends_at.astimezone(UTC).isoformat(),
                         "body": f"Event page: {page}", "location": location or ""})
    return {"google_url": f"https://calendar.google.com/calendar/render?{google}",
            "outlook_url": f"https://outlook.live.com/calendar/0/deeplink/compose?{outlook}"}


def event_add_links(event: Event) -> dict[str, str]:
    return calendar_add_links(event_id=event.event_id, title=event.title, starts_at=event.starts_at,
                              ends_at=event_ends(event), location=event.location, time_zone=event.time_zone)
