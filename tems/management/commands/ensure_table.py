from django.core.management.base import BaseCommand

from tems.dynamo import current_config, ensure_table


class Command(BaseCommand):
    help = "Create the DynamoDB table, its indexes and TTL if missing. Idempotent; changes nothing that exists."

    def handle(self, *args, **options) -> None:
        done = ensure_table()
        table = current_config().table_name
        for line in done:
            self.stdout.write(self.style.SUCCESS(line))
        if not done:
            self.stdout.write(f"table {table} is up to date")
