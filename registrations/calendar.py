"""An "Add to calendar" file for a registration: one VEVENT built with the maintained ``icalendar`` library."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.urls import reverse
from icalendar import Calendar
from icalendar import Event as CalendarEvent

from registrations.models import Event

# TEMS stores a start only; calendars need an end. Two hours covers a talk or a club night; the event page says
# what it really is.
ASSUMED_DURATION = timedelta(hours=2)


def registration_ics(*, event: Event, registration: dict, stamp) -> bytes:
    """The .ics of ``registration`` (as ``registration_to_dict`` gives it) for ``event``.

    The UID is the registration's, so importing the file twice updates one calendar entry instead of adding two.
    """
    page = settings.TEMS_PUBLIC_URL + reverse("registrations:event_detail", kwargs={"event_id": event.event_id})
    calendar = Calendar()
    calendar.add("prodid", "-//TEMS//University events//EN")
    calendar.add("version", "2.0")
    entry = CalendarEvent()
    entry.add("uid", f"registration-{registration['registration_id']}@tems")
    entry.add("dtstamp", stamp)
    entry.add("dtstart", event.starts_at)
    entry.add("dtend", event.starts_at + ASSUMED_DURATION)
    entry.add("summary", event.title if registration["status"] != "waitlisted"
              else f"{event.title} (waiting list #{registration['position']})")
    if event.location:
        entry.add("location", event.location)
    entry.add("url", registration["ticket_url"] if registration["status"] == "confirmed" else page)
    entry.add("description", f"Event page: {page}\n" + (
        f"Your ticket: {registration['ticket_url']}" if registration["status"] == "confirmed"
        else "You are on the waiting list: a freed seat goes to the first in line and we will e-mail you."))
    calendar.add_component(entry)
    return calendar.to_ical()
