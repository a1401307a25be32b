from datetime import UTC, datetime

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User


class UtcDateTimeField(forms.DateTimeField):
    """A date-time that can be stored: it must convert to UTC, in the years 1900 to 9999.

    Year 1 or 9999 with an offset overflows datetime on the way to UTC, and years before 1000 would be written
    without four digits, which the table's date format cannot read back; nothing TEMS schedules is that far off.
    """

    MIN_YEAR = 1900

    def to_python(self, value) -> datetime | None:
        result = super().to_python(value)
        if result is None:
            return None
        try:
            year = result.astimezone(UTC).year
        except OverflowError:
            year = None
        if year is None or not self.MIN_YEAR <= year <= 9999:
            raise forms.ValidationError(f"Choose a date between the years {self.MIN_YEAR} and 9999.",
                                        code="out_of_range")
        return result


class SignUpForm(UserCreationForm):
    email = forms.EmailField(required=True, help_text="Your university e-mail address.")

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")


class RegistrationRaceForm(forms.Form):
    """The lab's registration race, from the page and from the API alike."""

    API_FIELDS = ("records_created", "distinct_registration_ids", "claims", "counter", "responses",
                  "dynamodb_requests", "consumed_wcu", "elapsed_ms")

    technique = forms.ChoiceField(choices=[
        ("naive", "Naive read-then-write (broken)"),
        ("claim", "Claim key + conditional put"),
        ("transaction", "Claim + TransactWriteItems"),
        ("powertools", "Powertools-style wrapper"),
        ("production", "TEMS: one transaction"),
    ])
    taps = forms.IntegerField(min_value=1, max_value=100, initial=10, help_text="1 to 100 taps, fired at once.")
    same_key = forms.BooleanField(required=False, label="All taps share one idempotency key (network retries)",
                                  help_text="Unticked: each tap makes its own key, as double clicks do.")
    latency_ms = forms.IntegerField(min_value=0, max_value=200, initial=20, label="Simulated network delay (ms)",
                                    help_text="0 to 200 ms between the handler's read and its write.")


class LostUpdateForm(forms.Form):
    """The lab's lost-update race on one inventory item."""

    API_FIELDS = ("expected_quantity", "final_quantity", "lost_units", "conflicts", "retries", "elapsed_ms")

    technique = forms.ChoiceField(choices=[
        ("naive", "Naive get-then-put (broken)"),
        ("versioned", "Versioned write with retries"),
        ("atomic", "Atomic adjustment"),
    ])
    writers = forms.IntegerField(min_value=1, max_value=50, initial=10, help_text="1 to 50 writers at once.")
    units_each = forms.IntegerField(min_value=1, max_value=20, initial=2, label="Units each writer sells",
                                    help_text="1 to 20.")
