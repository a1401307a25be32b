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
