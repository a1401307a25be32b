"""The form of an event's cancellation: the optional reason every notice carries."""

from django import forms

from registrations.errors import RegistrationError
from registrations.events.models import MAX_CANCEL_REASON_CHARS
from registrations.events.services import cancel_reason_checked


class EventCancelForm(forms.Form):
    """From the page and from the API alike; the service checks the reason again, so no caller can skip it."""

    reason = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 3}), label="Reason (optional)",
        help_text=f"Sent to everyone in the cancellation e-mail and shown on the event's page. At most "
                  f"{MAX_CANCEL_REASON_CHARS} characters.")

    def clean_reason(self) -> str:
        try:
            return cancel_reason_checked(self.cleaned_data.get("reason"))
        except RegistrationError as error:
            raise forms.ValidationError(error.detail) from None
