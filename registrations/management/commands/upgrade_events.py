import sys

from django.core.management.base import CommandError

from registrations.management.event_command import EventCommand
from registrations.services.upgrade import event_upgrade


class _Progress:
    """A one-line progress bar on a terminal: events done of the events to upgrade."""

    def __init__(self, stream, total: int) -> None:
        self.stream, self.total, self.done = stream, max(total, 1), 0

    def step(self, event_id: str) -> None:
        self.done += 1
        share = min(self.done / self.total, 1.0)
        self.stream.write(f"\r[{'#' * int(share * 30):<30}] {self.done:,}/{self.total:,} events ({share:.0%}) "
                          f"{event_id[:24]:<24}")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\r" + " " * 90 + "\r")
        self.stream.flush()


class Command(EventCommand):
    help = ("Bring every event to the current shape (registrations.services.upgrade.event_upgrade): seat shards, the "
            "waiting list's gate and queue items, the registration layout, waiting-list entries into lanes and "
            "carrying their registration, confirmed registrations naming their shard, the waitlist departure "
            "counters and the attendee index. Run it at every deploy. Idempotent (each step is conditioned on "
            "what it read, so running it twice, or while students register, changes nothing twice) and "
            "resumable: a stopped run prints the "
            "last event it finished, and --after EVENT_ID goes on from there. Replaces shard_seats, "
            "upgrade_registrations and registrations_backfill, which remain as single steps.")

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--after", help="skip the events up to and including this one (resume a stopped run)")

    def handle(self, *args, events: list[str] | None = None, after: str | None = None, **options) -> None:
        event_ids = self.event_ids(events)
        if after is not None:
            if after not in event_ids:
                raise CommandError(f"--after {after}: no such event among those to upgrade")
            event_ids = event_ids[event_ids.index(after) + 1:]
        progress = _Progress(sys.stderr, len(event_ids)) if self.stdout.isatty() else None
        last = after
        try:
            for event_id in event_ids:
                done = event_upgrade(event_id=event_id)
                if progress is not None:
                    progress.step(event_id)
                else:
                    self.stdout.write(f"{event_id}: {done.summary()}")
                self.report_duplicates(event_id, done.duplicates, stream=self.stderr)
                last = event_id
        except Exception as error:
            resume = f" Resume with --after {last}." if last is not None else ""
            raise CommandError(f"Stopped at an event after {last or 'the start'}: {error!r}.{resume}") from error
        finally:
            if progress is not None:
                progress.close()
        self.stdout.write(self.style.SUCCESS(f"{len(event_ids)} event(s) in the current shape."))
