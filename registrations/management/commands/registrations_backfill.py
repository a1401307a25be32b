from django.core.management.base import BaseCommand

from registrations import attendees
from registrations.models import Event
from registrations.services.upgrade import rebuild_departures


class Command(BaseCommand):
    help = ("One step of upgrade_events, which runs every step at deploy: rebuild each event's waitlist departure "
            "counters from its entries and add the attendee index key to its registrations. Safe while the site is "
            "live, and twice.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--event", action="append", dest="events", help="only this event id (repeatable)")

    def handle(self, *args, events: list[str] | None = None, **options) -> None:
        event_ids = events or [event.event_id for event in Event.by_start.query(Event.COLLECTION)]
        for event_id in event_ids:
            nodes = rebuild_departures(event_id=event_id)
            indexed = attendees.backfill_index(event_id=event_id)
            self.stdout.write(f"{event_id}: {nodes} departure node(s), {indexed} registration(s) indexed")
