"""The form of a staff message to an event's attendees."""

from django import forms

from registrations.messages.services import AUDIENCE_LABELS, MAX_BODY_CHARS, MAX_SUBJECT_CHARS
from registrations.models import CONFIRMED


class MessageForm(forms.Form):
    """A message to an event's attendees, from the page and from the API alike."""

    audience = forms.ChoiceField(choices=list(AUDIENCE_LABELS.items()), initial=CONFIRMED, widget=forms.RadioSelect,
                                 label="Send to")
    subject = forms.CharField(max_length=MAX_SUBJECT_CHARS)
    body = forms.CharField(max_length=MAX_BODY_CHARS, widget=forms.Textarea(attrs={"rows": 8}), label="Message",
                           help_text="Sent as plain text, followed by the event's time, place and link.")

    def clean_subject(self) -> str:
        subject = self.cleaned_data["subject"].strip()
        if not subject:
            raise forms.ValidationError("A subject is required.")
        return subject
