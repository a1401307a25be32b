import time

from django.conf import settings
from django.core.management.base import BaseCommand

from tems.outbox import outbox_relay, run_periodic_jobs


class Command(BaseCommand):
    help = ("Deliver the outbox's pending messages (mails after committed registrations), then delete them; "
            "and run the apps' periodic jobs (settings.RELAY_PERIODIC_JOBS: the reminder sweep), at most once a "
            "RELAY_JOB_INTERVAL_SECONDS with --loop.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--loop", action="store_true", help="keep polling until stopped")
        parser.add_argument("--interval", type=float, default=2.0, help="seconds between passes with --loop")

    def handle(self, *args, loop: bool, interval: float, **options) -> None:
        jobs_due = 0.0
        while True:
            if time.monotonic() >= jobs_due:
                run_periodic_jobs()
                jobs_due = time.monotonic() + settings.RELAY_JOB_INTERVAL_SECONDS
            report = outbox_relay()
            if report.delivered or report.failed or not loop:
                self.stdout.write(f"delivered {report.delivered}, failed {report.failed}, skipped {report.skipped}")
            if not loop:
                return
            time.sleep(interval)
