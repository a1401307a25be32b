"""Forms of an event: create, edit at a version, and the event list's search."""

import zoneinfo
from datetime import datetime, time, timedelta

from django import forms
from django.conf import settings
from django.utils import timezone

from registrations.errors import RegistrationError
from registrations.events.index import MAX_ORGANIZER_CHARS, words_of
from registrations.events.models import (
    CATEGORIES,
    DEFAULT_OFFER_HOURS,
    DEFAULT_REMINDER_HOURS,
    MAX_OFFER_HOURS,
    MAX_REMINDER_HOURS,
    MIN_OFFER_HOURS,
)
from registrations.events.selectors import EventFilters
from tems.clock import utcnow
from tems.forms import UtcDateTimeField
from tems.permissions import EVENT_CREATE
from tems.teams.forms import TeamChoiceMixin

MAX_CAPACITY = 100_000
# The dates an event's times are typed in: the start, the end and the registration window.
TIMES = ("starts_at", "ends_at", "registration_opens_at", "registration_closes_at")


def _zones() -> list[tuple[str, str]]:
    return [(name, name.replace("_", " ")) for name in sorted(zoneinfo.available_timezones())
            if "/" in name and not name.startswith(("Etc/", "SystemV/", "posix/", "right/"))]


class ZonedDateTimeField(UtcDateTimeField):
    """A date and time typed in the event's zone (``zone``, set by the form), shown in it again."""

    zone = None

    def to_python(self, value):
        with timezone.override(self.zone or timezone.get_default_timezone()):
            return super().to_python(value)

    def prepare_value(self, value):
        if isinstance(value, datetime) and timezone.is_aware(value) and self.zone is not None:
            return timezone.make_naive(value, self.zone)
        return super().prepare_value(value)


def _when_field(label: str, *, required: bool = False, help_text: str = "") -> ZonedDateTimeField:
    return ZonedDateTimeField(required=required, label=label, help_text=help_text, widget=forms.DateTimeInput(
        attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"))


class EventForm(TeamChoiceMixin, forms.Form):
    """Validates an event from the page and from the API alike; given the creating ``user``, it also asks for the
    organizing team (an edit keeps the team the event was created with)."""

    team_permission = EVENT_CREATE

    title = forms.CharField(max_length=200)
    description = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 4}))
    location = forms.CharField(required=False, max_length=200, label="Venue",
                               help_text="Where people come in person; empty for an online-only event.")
    map_url = forms.URLField(required=False, max_length=500, label="Map link (optional)", assume_scheme="https")
    online_url = forms.URLField(required=False, max_length=500, label="Online link (optional)", assume_scheme="https",
                                help_text="Shown only to people with a confirmed place.")
    starts_at = _when_field("Starts", required=True)
    ends_at = _when_field("Ends")
    time_zone = forms.ChoiceField(required=False, choices=_zones, label="Time zone",
                                  help_text="The times above are in this zone.")
    category = forms.ChoiceField(required=False, choices=[("", "(none)"), *CATEGORIES])
    organizer = forms.CharField(required=False, max_length=MAX_ORGANIZER_CHARS,
                                help_text="Who runs it, for an event without a team: a team's event shows "
                                          "its team's name.")
    public = forms.BooleanField(required=False, label="Listed publicly",
                                help_text="Shown to visitors who are not logged in; registering still needs an "
                                          "account.")
    registration_opens_at = _when_field("Registration opens", help_text="Empty: open now.")
    registration_closes_at = _when_field("Registration closes", help_text="Empty: at the start.")
    capacity = forms.IntegerField(min_value=1, max_value=MAX_CAPACITY)
    reminder_hours = forms.IntegerField(
        required=False, min_value=0, max_value=MAX_REMINDER_HOURS, initial=DEFAULT_REMINDER_HOURS,
        label="Reminder (hours before the start)",
        help_text=f"Confirmed registrants get a reminder e-mail this long before the start; 0 sends none. Empty: "
                  f"{DEFAULT_REMINDER_HOURS}.")
    # 0 (or empty): a freed seat goes to the first in line at once; hours: it is offered and held that long.
    offer_hours = forms.IntegerField(
        required=False, min_value=0, max_value=MAX_OFFER_HOURS, initial=0,
        label="Waiting list: hours to accept a freed seat",
        help_text=f"0: the first in line gets a freed seat at once. {MIN_OFFER_HOURS} or more (usually "
                  f"{DEFAULT_OFFER_HOURS}): the seat is offered to them by e-mail and held that long; an event "
                  "starting sooner than that gives it at once.")
    # A past start is allowed (recording an event afterwards) but never by accident: it must be confirmed.
    # The API sends "confirm_past": true; without it a past starts_at is a field error (docs/registrations.md).
    confirm_past = forms.BooleanField(required=False, label="Yes, this event starts in the past",
                                      help_text="Registration is closed from the start time on.",
                                      widget=forms.HiddenInput)

    def __init__(self, *args, opened_starts_at=None, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        if user is not None:
            self._set_up_team(user)
        # An edit that keeps the start it was opened with needs no confirmation, even once that start has passed.
        self.opened_starts_at = opened_starts_at
        self.fields["time_zone"].initial = settings.TIME_ZONE
        # The typed times mean the event's zone: the one posted, else the one it is shown in.
        self.zone = self._zone(self.data.get("time_zone") if self.is_bound else self.initial.get("time_zone"))
        for name in TIMES:
            self.fields[name].zone = self.zone

    @staticmethod
    def _zone(name) -> zoneinfo.ZoneInfo:
        try:
            return zoneinfo.ZoneInfo(name) if isinstance(name, str) and name else timezone.get_default_timezone()
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            return timezone.get_default_timezone()


    def clean_time_zone(self) -> str | None:
        zone = self.cleaned_data.get("time_zone") or ""
        return None if zone in ("", settings.TIME_ZONE) else zone

    def clean_organizer(self) -> str:
        return " ".join(self.cleaned_data.get("organizer", "").split())

    def clean_title(self) -> str:
        title = self.cleaned_data["title"].strip()
        if not title:
            raise forms.ValidationError("A title is required.")
        return title

    def clean(self) -> dict:
        data = super().clean()
        starts_at = data.get("starts_at")
        unchanged = self.opened_starts_at is not None and starts_at == self.opened_starts_at
        if starts_at and starts_at <= utcnow() and not unchanged and not data.get("confirm_past"):
            self.add_error("starts_at", forms.ValidationError(
                "This start is in the past: registration would be closed at once. Correct the date, or tick "
                "“Yes, this event starts in the past” to save it anyway.", code="past"))
            # The confirmation is offered only once it is needed, right under the start it confirms.
            self.fields["confirm_past"].widget = forms.CheckboxInput()
            self.order_fields(["title", "description", "location", "starts_at", "confirm_past"])
        data.pop("confirm_past", None)
        ends_at, opens, closes = (data.get(name) for name in TIMES[1:])
        if starts_at and ends_at and ends_at < starts_at:
            self.add_error("ends_at", forms.ValidationError("The end must not be before the start.", code="order"))
        if opens and closes and closes <= opens:
            self.add_error("registration_closes_at", forms.ValidationError(
                "Registration must close after it opens.", code="order"))
        if starts_at and closes and closes > starts_at:
            self.add_error("registration_closes_at", forms.ValidationError(
                "Registration closes at the start at the latest.", code="order"))
        return data


class EventEditForm(EventForm):
    # The version the editor's page was rendered from: the update only applies if it is still current.
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    # The values the page was opened with (signed, tems.merge): what this editor changed is what differs from it.
    base = forms.CharField(required=False, widget=forms.HiddenInput)


class EventSearchForm(forms.Form):
    """The event list's search and filters (``?q=&from=&to=&category=&organizer=&free=&mode=``), page and API."""

    q = forms.CharField(required=False, max_length=100, label="Search",
                        widget=forms.TextInput(attrs={"type": "search", "placeholder": "A word of the title"}))
    starts_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    starts_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    category = forms.ChoiceField(required=False, choices=[("", "Any"), *CATEGORIES],
                                 widget=forms.Select(attrs={"id": "search-category"}))
    organizer = forms.CharField(required=False, max_length=MAX_ORGANIZER_CHARS)
    mode = forms.ChoiceField(required=False, label="Where", choices=[("", "Online or in person"),
                                                                    ("online", "Online"),
                                                                    ("in_person", "In person")],
                             widget=forms.Select(attrs={"id": "search-mode"}))
    free = forms.BooleanField(required=False, label="Has free seats")

    # The query's names for the two dates (``from`` is a Python keyword, so the fields have other names).
    ALIASES = {"from": "starts_from", "to": "starts_to"}

    def __init__(self, query=None, **kwargs):
        if query is not None:
            query = query.copy()
            for alias, name in self.ALIASES.items():
                if alias in query:
                    query[name] = query[alias]
        super().__init__(query, **kwargs)

    def clean_q(self) -> str:
        text = self.cleaned_data.get("q", "").strip()
        if text and not words_of(text):
            raise forms.ValidationError("Search for a word of at least two letters (words such as “the” are "
                                        "not searched).", code="no_words")
        return text

    def clean(self) -> dict:
        data = super().clean()
        for name in ("starts_from", "starts_to"):
            day = data.get(name)
            if day is not None and not UtcDateTimeField.MIN_YEAR <= day.year <= 9998:
                self.add_error(name, forms.ValidationError("Choose a date between the years 1900 and 9998.",
                                                           code="out_of_range"))
        first, last = data.get("starts_from"), data.get("starts_to")
        if first and last and last < first:
            self.add_error("starts_to", forms.ValidationError("“To” must not be before “From”.", code="order"))
        return data

    def filters(self, *, public_only: bool):
        """The valid query as ``EventFilters``; RegistrationError('invalid') naming each wrong field."""
        if not self.is_valid():
            errors = {self.ALIASES_BACK.get(name, name): [str(m) for m in messages]
                      for name, messages in self.errors.items()}
            raise RegistrationError("invalid", "Check the search: " + " ".join(
                message for messages in errors.values() for message in messages), errors=errors)
        data = self.cleaned_data
        return EventFilters(
            text=data["q"], starts_from=_day_start(data["starts_from"]),
            starts_before=_day_start(data["starts_to"] and data["starts_to"] + timedelta(days=1)),
            category=data["category"] or None, organizer=data["organizer"] or None, free_seats=data["free"],
            mode=data["mode"] or None, public_only=public_only)

    ALIASES_BACK = {name: alias for alias, name in ALIASES.items()}


def _day_start(day) -> datetime | None:
    """Midnight of ``day`` in the site's zone: dates in a search are the site's days."""
    if not day:
        return None
    return timezone.make_aware(datetime.combine(day, time()), timezone.get_default_timezone())


def event_form_values(event) -> dict:
    """The stored event as the form's fields: what an edit leaves out keeps."""
    def when(value):
        return value.isoformat() if value else None

    return {"title": event.title, "description": event.description, "location": event.location,
            "starts_at": event.starts_at.isoformat(), "capacity": int(event.capacity),
            "reminder_hours": event.reminder_hours_or_default, "offer_hours": int(event.offer_hours or 0),
            "ends_at": when(event.ends_at), "time_zone": event.time_zone or "", "map_url": event.map_url or "",
            "online_url": event.online_url or "", "category": event.category or "",
            "organizer": event.organizer or "", "public": bool(event.public),
            "registration_opens_at": when(event.registration_opens_at),
            "registration_closes_at": when(event.registration_closes_at)}
