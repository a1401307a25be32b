from registrations.management.event_command import EventCommand
from registrations.services.upgrade import shard_event


class Command(EventCommand):
    help = ("One step of upgrade_events, which runs every step at deploy: move each event's seat counter into seat "
            "shards (one transaction per event, under the condition that its counters did not move). Safe while the "
            "site is live, and twice.")

    def handle_event(self, event_id: str) -> None:
        moved = shard_event(event_id=event_id)
        self.stdout.write(f"{event_id}: {'moved into seat shards' if moved else 'already sharded (or gone)'}")
