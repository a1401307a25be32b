from registrations.management.event_command import EventCommand
from registrations.services.upgrade import layout_upgrade


class Command(EventCommand):
    help = ("One step of upgrade_events, which runs every step at deploy: move each event's claims and event-side "
            "registrations out of the event's partition (one transaction per registration), then mark the event "
            "current. Safe while the site is live, and twice.")

    def handle_event(self, event_id: str) -> None:
        done = layout_upgrade(event_id=event_id)
        if done.marked:
            self.stdout.write(f"{event_id}: {done.moved} registration(s) moved, now in the current layout")
        else:
            self.stdout.write(f"{event_id}: already in the current layout (or gone)")
        self.report_duplicates(event_id, done.duplicates)
