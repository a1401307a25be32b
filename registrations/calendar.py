"""An "Add to calendar" file for a registration: one VEVENT built with the maintained ``icalendar`` library."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.urls import reverse
from icalendar import Calendar
from icalendar import Event as CalendarEvent

from registrations.events.models import Event

# TEMS stores a start only; calendars need an end. Two hours covers a talk or a club night; the event page says
# what it really is.
ASSUMED_DURATION = timedelta(hours=2)


def sequence_of(event: Event) -> int:
    """The entry's SEQUENCE: it must grow with every change a calendar should take over. Each edit raises the
    event's version; the cancellation does not (it is not an edit), so it counts one more."""
    return int(event.version or 0) + (1 if event.is_cancelled else 0)


def registration_ics(*, event: Event, registration: dict, stamp) -> bytes:
    """The .ics of ``registration`` (as ``serializers.registration_to_dict`` gives it) for ``event``.

    The UID is the registration's, so importing the file twice updates one calendar entry instead of adding two;
    SEQUENCE (``sequence_of``) tells the calendar which file is newer, so a cancelled event's file
    (``STATUS:CANCELLED``) replaces the entry instead of being ignored. The start and end carry the site's time
    zone (TZID, with its VTIMEZONE), so a calendar shows them at the wall-clock time the event page does; DTSTAMP
    stays in UTC, as RFC 5545 requires.
    """
    page = settings.TEMS_PUBLIC_URL + reverse("registrations:event_detail", kwargs={"event_id": event.event_id})
    zone = ZoneInfo(settings.TIME_ZONE)
    calendar = Calendar()
    calendar.add("prodid", "-//TEMS//University events//EN")
    calendar.add("version", "2.0")
    entry = CalendarEvent()
    entry.add("uid", f"registration-{registration['registration_id']}@tems")
    entry.add("dtstamp", stamp)
    entry.add("sequence", sequence_of(event))
    entry.add("status", "CANCELLED" if event.is_cancelled else "CONFIRMED")
    entry.add("dtstart", event.starts_at.astimezone(zone))
    entry.add("dtend", (event.ends_at or event.starts_at + ASSUMED_DURATION).astimezone(zone))
    title = f"Cancelled: {event.title}" if event.is_cancelled else event.title
    entry.add("summary", title if registration["status"] != "waitlisted"
              else f"{title} (waiting list #{registration['position']})")
    if event.location:
        entry.add("location", event.location)
    entry.add("url", registration["ticket_url"] if registration["status"] == "confirmed" else page)
    entry.add("description", f"Event page: {page}\n" + (
        f"Your ticket: {registration['ticket_url']}" if registration["status"] == "confirmed"
        else "You are on the waiting list: a freed seat goes to the first in line and we will e-mail you."))
    calendar.add_component(entry)
    calendar.add_missing_timezones()
    return calendar.to_ical()
