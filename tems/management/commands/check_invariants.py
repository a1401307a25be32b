from django.core.management.base import BaseCommand, CommandError

from tems.invariants import check_all


class Command(BaseCommand):
    help = "Scan the table and report every broken invariant; exit status 1 if any is broken."

    def handle(self, *args, **options) -> None:
        results = check_all()
        broken = 0
        for name, problems in results.items():
            if problems:
                broken += len(problems)
                self.stdout.write(self.style.ERROR(f"BROKEN  {name}"))
                for problem in problems:
                    self.stdout.write(f"        {problem}")
            else:
                self.stdout.write(self.style.SUCCESS(f"ok      {name}"))
        if broken:
            raise CommandError(f"{broken} invariant violation(s)", returncode=1)
