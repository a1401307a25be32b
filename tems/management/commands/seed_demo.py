from django.core.management.base import BaseCommand

from inventory.demo import seed_items
from registrations.demo import seed_events
from tems.demo import DEMO_PASSWORD, DEMO_STAFF, DEMO_STUDENTS, seed_users


class Command(BaseCommand):
    help = "Create the demo accounts and data that are missing (running it twice creates nothing twice)."

    def handle(self, *args, **options) -> None:
        users = seed_users()
        events = seed_events()
        items = seed_items()
        self.stdout.write(
            f"created {len(users)} demo account(s), {len(events)} demo event(s), {len(items)} inventory item(s)"
        )
        self.stdout.write("Demo log-ins (password for all: %s):" % DEMO_PASSWORD)
        self.stdout.write(f"  staff:    {DEMO_STAFF}")
        self.stdout.write(f"  students: {', '.join(DEMO_STUDENTS)}")
