"""The base of the commands that bring each event's items up to date, one event at a time."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from registrations.models import Event


class EventCommand(BaseCommand):
    """Runs ``handle_event`` for every event, or only for those named with ``--event``."""

    def add_arguments(self, parser) -> None:
        parser.add_argument("--event", action="append", dest="events", help="only this event id (repeatable)")

    @staticmethod
    def event_ids(events: list[str] | None) -> list[str]:
        """The events named with ``--event``, or every event, soonest first."""
        return events or [event.event_id for event in Event.by_start.query(Event.COLLECTION)]

    def handle(self, *args, events: list[str] | None = None, **options) -> None:
        for event_id in self.event_ids(events):
            self.handle_event(event_id)

    def handle_event(self, event_id: str) -> None:
        raise NotImplementedError

    def report_duplicates(self, event_id: str, duplicates: list[tuple[str, str]], *, stream=None) -> None:
        """Name each legacy claim left in place because its student already holds a current one."""
        for user_id, registration_id in duplicates:
            (stream or self.stdout).write(self.style.ERROR(
                f"{event_id}: {user_id} also holds registration {registration_id} under the legacy key; left in "
                "place (two registrations of one student: cancel one)"))
