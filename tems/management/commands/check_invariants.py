import sys

from django.core.management.base import BaseCommand, CommandError

from tems.dynamo import boto3_client, current_config
from tems.invariants import check_report


class _Progress:
    """A one-line progress bar on a terminal; the total is DynamoDB's item count, an estimate refreshed by
    AWS every few hours, so the bar may end short of, or past, 100%."""

    def __init__(self, stream, total: int) -> None:
        self.stream, self.total, self.done = stream, max(total, 1), 0

    def __call__(self, items: int) -> None:
        self.done += items
        share = min(self.done / self.total, 1.0)
        bar = "#" * int(share * 30)
        self.stream.write(f"\r[{bar:<30}] {self.done:,} items scanned ({share:.0%})")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\r" + " " * 70 + "\r")
        self.stream.flush()


class Command(BaseCommand):
    help = "Scan the table once and report every broken invariant; exit status 1 if any is broken."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--segments", type=int, default=4,
                            help="parallel scan segments (default 4); more is faster on a large table")

    def handle(self, *args, **options) -> None:
        segments = options["segments"]
        if not 1 <= segments <= 1000:
            raise CommandError("--segments must be between 1 and 1000")
        progress = None
        if self.stdout.isatty():
            described = boto3_client().describe_table(TableName=current_config().table_name)
            progress = _Progress(sys.stderr, int(described["Table"].get("ItemCount", 0)))
        try:
            report = check_report(segments=segments, on_page=progress)
        finally:
            if progress is not None:
                progress.close()
        for name, problems in report.results.items():
            if problems:
                self.stdout.write(self.style.ERROR(f"BROKEN  {name}"))
                for problem in problems:
                    self.stdout.write(f"        {problem}")
            else:
                self.stdout.write(self.style.SUCCESS(f"ok      {name}"))
        kinds = ", ".join(f"{count:,} {entity}" for entity, count in sorted(report.by_entity.items()))
        self.stdout.write(f"Checked {len(report.results)} invariants over {report.items:,} items ({kinds or 'none'}) "
                          f"in {report.segments} segment(s), {report.seconds:.2f} s.")
        if report.broken:
            raise CommandError(f"{report.broken} invariant violation(s)", returncode=1)
