import time

from django.core.management.base import BaseCommand

from tems.outbox import outbox_relay


class Command(BaseCommand):
    help = "Deliver the outbox's pending messages (mails after committed registrations), then delete them."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--loop", action="store_true", help="keep polling until stopped")
        parser.add_argument("--interval", type=float, default=2.0, help="seconds between passes with --loop")

    def handle(self, *args, loop: bool, interval: float, **options) -> None:
        while True:
            report = outbox_relay()
            if report.delivered or report.failed or not loop:
                self.stdout.write(f"delivered {report.delivered}, failed {report.failed}, skipped {report.skipped}")
            if not loop:
                return
            time.sleep(interval)
