from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inventory.demo import seed_items
from registrations.demo import seed_events
from tems.demo import DEMO_PASSWORD, DEMO_STAFF, DEMO_STUDENTS, seed_users


class Command(BaseCommand):
    help = "Create the demo accounts and data that are missing (running it twice creates nothing twice)."

    def handle(self, *args, **options) -> None:
        if not settings.TEMS_DEMO:
            # The demo accounts share a password printed in the README: on a real deployment they are a way in.
            raise CommandError(
                "seed_demo creates accounts whose password is published, so it runs only in demo mode: "
                "set TEMS_DEMO=1 (make run does) on a machine that is not a real deployment."
            )
        users = seed_users()
        events = seed_events()
        items = seed_items()
        self.stdout.write(
            f"created {len(users)} demo account(s), {len(events)} demo event(s), {len(items)} inventory item(s)"
        )
        self.stdout.write("Demo log-ins (password for all: %s):" % DEMO_PASSWORD)
        self.stdout.write(f"  staff:    {DEMO_STAFF}")
        self.stdout.write(f"  students: {', '.join(DEMO_STUDENTS)}")
