"""Demo accounts shared by seed_demo, the log-in page and the lab."""

from django.contrib.auth.models import User

from tems.accounts import email_address_mark_verified, email_address_verified

DEMO_PASSWORD = "tems-demo-pass"
DEMO_STAFF = "staff"
DEMO_STUDENTS = ("alice", "bob", "chen", "dara", "emeka")
# Names, so the demo's attendee lists show what staff see in use.
DEMO_NAMES = {"staff": ("Sam", "Staff"), "alice": ("Alice", "Adeyemi"), "bob": ("Bob", "Brennan"),
              "chen": ("Chen", "Wei"), "dara": ("Dara", "Ó Briain"), "emeka": ("Emeka", "Okafor")}


def seed_users() -> list[str]:
    """Create the demo accounts that are missing; returns the usernames it created."""
    created = []
    for username in (DEMO_STAFF, *DEMO_STUDENTS):
        user, was_created = User.objects.get_or_create(
            username=username, defaults={"email": f"{username}@demo.tems.invalid", "is_staff": username == DEMO_STAFF,
                                         "first_name": DEMO_NAMES[username][0], "last_name": DEMO_NAMES[username][1]}
        )
        if was_created:
            user.set_password(DEMO_PASSWORD)
            user.save()
            created.append(username)
        # Their .invalid addresses reach nobody; verified, they show the notification mails in make run.
        if not email_address_verified(user=user):
            email_address_mark_verified(user=user)
    return created


def seed() -> str:
    """``seed_demo``'s hook (every installed app may have one in ``<app>/demo.py``): create, then say what."""
    return f"{len(seed_users())} demo account(s)"
