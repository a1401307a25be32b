from django.core.management.base import BaseCommand

from registrations.models import Event
from registrations.services.upgrade import shard_event


class Command(BaseCommand):
    help = ("One step of upgrade_events, which runs every step at deploy: move each event's seat counter into seat "
            "shards (one transaction per event, under the condition that its counters did not move). Safe while the "
            "site is live, and twice.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--event", action="append", dest="events", help="only this event id (repeatable)")

    def handle(self, *args, events: list[str] | None = None, **options) -> None:
        event_ids = events or [event.event_id for event in Event.by_start.query(Event.COLLECTION)]
        for event_id in event_ids:
            moved = shard_event(event_id=event_id)
            self.stdout.write(f"{event_id}: {'moved into seat shards' if moved else 'already sharded (or gone)'}")
