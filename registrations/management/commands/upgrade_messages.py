from registrations.management.event_command import EventCommand
from registrations.services.messages import messages_index


class Command(EventCommand):
    help = ("Put every event's messages written before the newest-first message list existed into it "
            "(registrations.services.messages.messages_index). Idempotent: each message is placed by a conditional "
            "write, so a second run, or one beside new messages being sent, changes nothing twice.")

    def handle_event(self, event_id: str) -> None:
        placed = messages_index(event_id=event_id)
        if placed:
            self.stdout.write(f"{event_id}: {placed} message(s) placed in the list")
