from registrations import attendees, waitlist
from registrations.management.event_command import EventCommand


class Command(EventCommand):
    help = ("For events created before issue 10: rebuild each event's waitlist departure counters from its entries "
            "and add the attendee index key to its registrations. Safe to run while the site is live, and twice.")

    def handle_event(self, event_id: str) -> None:
        nodes = waitlist.rebuild_departures(event_id=event_id)
        indexed = attendees.backfill_index(event_id=event_id)
        self.stdout.write(f"{event_id}: {nodes} departure node(s), {indexed} registration(s) indexed")
