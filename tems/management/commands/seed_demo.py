from importlib import import_module

from django.apps import apps
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.module_loading import module_has_submodule

from tems.demo import DEMO_PASSWORD, DEMO_STAFF, DEMO_STUDENTS, DEMO_TEAMS
from tems.permissions import ROLES


class Command(BaseCommand):
    help = "Create the demo accounts and data that are missing (running it twice creates nothing twice)."

    def handle(self, *args, **options) -> None:
        if not settings.TEMS_DEMO:
            # The demo accounts share a password printed in the README: on a real deployment they are a way in.
            raise CommandError(
                "seed_demo creates accounts whose password is published, so it runs only in demo mode: "
                "set TEMS_DEMO=1 (make run does) on a machine that is not a real deployment."
            )
        # Each app seeds its own data through ``<app>/demo.py``'s ``seed()``, in INSTALLED_APPS order (``tems``'s
        # accounts first), so this command never names an app.
        created = [import_module(f"{config.name}.demo").seed() for config in apps.get_app_configs()
                   if module_has_submodule(config.module, "demo")]
        self.stdout.write(f"created {', '.join(created)}")
        self.stdout.write(f"Demo log-ins (password for all: {DEMO_PASSWORD}):")
        self.stdout.write(f"  platform admin: {DEMO_STAFF}")
        for _, name, members in DEMO_TEAMS:
            self.stdout.write(f"  {name}: " + ", ".join(f"{user} ({ROLES[role].lower()})"
                                                      for role, user in members.items()))
        self.stdout.write(f"  students: {', '.join(DEMO_STUDENTS)}")
