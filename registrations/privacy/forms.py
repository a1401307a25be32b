"""The privacy features' input: the erase confirmation and an event's answer retention."""

from django import forms

from registrations.privacy.models import MAX_RETENTION_DAYS


class EraseForm(forms.Form):
    """Erasing cannot be undone, so the person types their username to say they mean it."""

    # Not stripped: what is typed must be the username itself.
    confirm = forms.CharField(max_length=150, strip=False, label="Type your username to confirm")

    def __init__(self, *args, username: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.username = username

    def clean_confirm(self) -> str:
        typed = self.cleaned_data["confirm"]
        if typed != self.username:
            raise forms.ValidationError("That is not your username: nothing was erased.", code="mismatch")
        return typed


class RetentionForm(forms.Form):
    """How long after the event its answers are kept; empty keeps them until someone erases them."""

    days = forms.IntegerField(required=False, min_value=0, max_value=MAX_RETENTION_DAYS,
                              label="Erase answers this many days after the event",
                              help_text="Leave empty to keep them.")
    version = forms.IntegerField(required=False, min_value=1, max_value=2**53, widget=forms.HiddenInput)
