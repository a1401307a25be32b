from datetime import UTC, datetime

from django import forms
from django.contrib.auth import forms as auth_forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User

from tems import accounts
from tems.errors import DomainError


def add_error_to_form(form: forms.Form, error: DomainError) -> None:
    """A refusal shown on the form that was posted: each field's problems at that field (at the top when the form
    has no such field), or the refusal's detail at the top when it names no field."""
    for field, problems in error.errors.items():
        for problem in problems:
            form.add_error(field if field in form.fields else None, problem)
    if not error.errors:
        form.add_error(None, error.detail)


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


class NamesMixin:
    """First name (required: staff find people by it at the door and on the attendee list) and last name
    (optional: not everyone has one). Any text a person's name can hold, but no control or bidirectional
    characters, which could garble a staff list."""

    NAME_FIELDS = ("first_name", "last_name")

    def _set_up_names(self) -> None:
        self.fields["first_name"].required = True
        self.fields["last_name"].label = "Last name (if you have one)"
        for name in self.NAME_FIELDS:
            self.fields[name].widget.attrs.setdefault("autocomplete", "given-name" if name == "first_name"
                                                      else "family-name")

    def _clean_name(self, name: str) -> str:
        value = self.cleaned_data.get(name, "")
        problem = accounts.name_problem(value)
        if problem:
            raise forms.ValidationError(problem, code="invalid")
        return value

    def clean_first_name(self) -> str:
        return self._clean_name("first_name")

    def clean_last_name(self) -> str:
        return self._clean_name("last_name")


class SignUpForm(NamesMixin, UserCreationForm):
    email = forms.EmailField(required=True, help_text="Your university e-mail address.")

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("first_name", "last_name", "username", "email")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._set_up_names()


class NamesForm(NamesMixin, forms.ModelForm):
    """The account page's names (local accounts only: an SSO account's come from the provider)."""

    class Meta:
        model = User
        fields = ("first_name", "last_name")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._set_up_names()


class PasswordResetForm(auth_forms.PasswordResetForm):
    """Django's reset form, mailing only accounts whose address is proven, within their hourly mail budget
    (``tems.accounts.password_reset_may_mail``). Django's own rules still apply: only active accounts with a
    usable password (an SSO account has none), and the same answer whether or not anyone was mailed."""

    def get_users(self, email):
        return (user for user in super().get_users(email) if accounts.password_reset_may_mail(user=user))
