from registrations import attendees
from registrations.management.event_command import EventCommand
from registrations.services.upgrade import rebuild_departures


class Command(EventCommand):
    help = ("One step of upgrade_events, which runs every step at deploy: rebuild each event's waitlist departure "
            "counters from its entries and add the attendee index key to its registrations. Safe while the site is "
            "live, and twice.")

    def handle_event(self, event_id: str) -> None:
        nodes = rebuild_departures(event_id=event_id)
        indexed = attendees.backfill_index(event_id=event_id)
        self.stdout.write(f"{event_id}: {nodes} departure node(s), {indexed} registration(s) indexed")
