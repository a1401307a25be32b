"""Forms of an event: create, and edit at a version."""

from django import forms
from django.utils import timezone

from registrations.events.models import (
    DEFAULT_OFFER_HOURS,
    DEFAULT_REMINDER_HOURS,
    MAX_OFFER_HOURS,
    MAX_REMINDER_HOURS,
    MIN_OFFER_HOURS,
)
from tems.clock import utcnow
from tems.forms import UtcDateTimeField
from tems.permissions import EVENT_CREATE
from tems.teams.forms import TeamChoiceMixin

MAX_CAPACITY = 100_000


class EventForm(TeamChoiceMixin, forms.Form):
    """Validates an event from the page and from the API alike; given the creating ``user``, it also asks for the
    organizing team (an edit keeps the team the event was created with)."""

    team_permission = EVENT_CREATE

    title = forms.CharField(max_length=200)
    description = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 4}))
    location = forms.CharField(required=False, max_length=200)
    starts_at = UtcDateTimeField(
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
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
        # Which clock the date and time picker means: the site's zone (its abbreviation changes with summer time).
        self.fields["starts_at"].help_text = f"Local time in {timezone.get_current_timezone_name()}."

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
            # The confirmation is offered only once it is needed.
            self.fields["confirm_past"].widget = forms.CheckboxInput()
        data.pop("confirm_past", None)
        return data


class EventEditForm(EventForm):
    # The version the editor's page was rendered from: the update only applies if it is still current.
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    # The values the page was opened with (signed, tems.merge): what this editor changed is what differs from it.
    base = forms.CharField(required=False, widget=forms.HiddenInput)
