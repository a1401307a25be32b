from django import forms

from tems.forms import UtcDateTimeField

MAX_CAPACITY = 100_000


class EventForm(forms.Form):
    """Validates an event from the page and from the API alike."""

    title = forms.CharField(max_length=200)
    description = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 4}))
    location = forms.CharField(required=False, max_length=200)
    starts_at = UtcDateTimeField(
        help_text="Local time, or ISO 8601 with an offset in the API.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    capacity = forms.IntegerField(min_value=1, max_value=MAX_CAPACITY)

    def clean_title(self) -> str:
        title = self.cleaned_data["title"].strip()
        if not title:
            raise forms.ValidationError("A title is required.")
        return title


class EventEditForm(EventForm):
    # The version the editor's page was rendered from: the update only applies if it is still current.
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)

