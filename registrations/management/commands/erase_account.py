from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from registrations.errors import RegistrationError
from registrations.privacy.services import personal_data_erase


class Command(BaseCommand):
    help = ("Erase an account and its personal data, as its owner can from /me/data/ "
            "(registrations.privacy.services.personal_data_erase): live registrations cancelled (seats to the next "
            "in line), history pseudonymised, the account deleted. Safe to run again. A staff account needs --staff: "
            "its name stays in the audit fields of the events, check-ins and stock changes it made.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--staff", action="store_true", help="allow erasing a staff account")

    def handle(self, *args, username: str, staff: bool, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No account named {username!r}.")
        try:
            report = personal_data_erase(user=user, allow_staff=staff)
        except RegistrationError as error:
            raise CommandError(error.detail) from None
        self.stdout.write(f"Erased {username}: {report.cancelled} registration(s) cancelled, "
                          f"{report.pseudonymised} kept under a pseudonym, {report.deleted} item(s) deleted, "
                          f"{report.redacted} redacted.")
