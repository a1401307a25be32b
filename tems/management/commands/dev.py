import logging
import os
import signal
import subprocess
import sys
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from tems.dynamo import TableConfig, configure_models
from tems.local_dynamodb import DynamoDBLocal, LauncherError
from tems.outbox import outbox_relay, run_periodic_jobs

logger = logging.getLogger(__name__)


def _relay_until(stopped: threading.Event, interval: float = 2.0) -> None:
    # The outbox relay beside the dev server, so confirmation mails appear in this console as they would be sent,
    # with the apps' periodic jobs (reminders) as `relay_outbox --loop` runs them.
    jobs_due = 0.0
    while not stopped.wait(interval):
        try:
            if time.monotonic() >= jobs_due:
                run_periodic_jobs()
                jobs_due = time.monotonic() + settings.RELAY_JOB_INTERVAL_SECONDS
            outbox_relay()
        except Exception:  # noqa: BLE001 - a failed pass is logged and the next one tries again
            logger.exception("outbox relay pass failed")


class Command(BaseCommand):
    help = "make run: DynamoDB Local persisting under .data/, migrations, table, demo data, then the web server."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--dynamodb-port", type=int, default=8765)

    def handle(self, *args, port: int, dynamodb_port: int, **options) -> None:
        data_dir = settings.DATA_DIR
        data_dir.mkdir(parents=True, exist_ok=True)
        dynamodb = DynamoDBLocal(port=dynamodb_port, db_path=data_dir / "dynamodb", log_path=data_dir / "dynamodb.log")
        try:
            dynamodb.start()
        except LauncherError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"DynamoDB Local at {dynamodb.endpoint}, data in {data_dir / 'dynamodb'}")
        env = {**os.environ, "DYNAMODB_ENDPOINT_URL": dynamodb.endpoint}
        stopped = threading.Event()
        try:
            configure_models(TableConfig(settings.DYNAMODB_TABLE, dynamodb.endpoint, settings.AWS_REGION))
            call_command("migrate", verbosity=0)
            call_command("ensure_table")
            if settings.TEMS_DEMO:
                call_command("seed_demo")
            else:
                self.stdout.write("TEMS_DEMO is off: no demo accounts (make run turns demo mode on).")
            threading.Thread(target=_relay_until, args=(stopped,), daemon=True, name="outbox-relay").start()
            self.stdout.write(self.style.SUCCESS(f"TEMS at http://127.0.0.1:{port}/  (Ctrl-C stops everything)"))
            # The server (and its autoreloader child) get their own process group, so stopping is one killpg
            # whether we got Ctrl-C or a SIGTERM.
            server = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}"], env=env,
                                      cwd=settings.BASE_DIR, start_new_session=True)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.default_int_handler)
            try:
                server.wait()
            except KeyboardInterrupt:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=15)
        finally:
            stopped.set()
            dynamodb.stop()
            self.stdout.write("DynamoDB Local stopped; your data stays in .data/ for the next make run.")
