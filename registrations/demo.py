from datetime import timedelta

from registrations.errors import RegistrationError
from registrations.events import services as event_services
from tems.clock import utcnow
from tems.models import DoorAssignment, Membership

# The last column is the organizing team (tems/demo.py's DEMO_TEAMS).
DEMO_EVENTS = (
    ("welcome-fair", "Welcome Week Fair", "Great Hall", 3, 200,
     "Meet every society, club and service in one afternoon.", "union"),
    ("python-workshop", "Intro to Python Workshop", "Computing Lab 2", 5, 10,
     "Hands-on, laptops provided. Seats are limited.", "compsoc"),
    ("career-talk", "Careers in Data: Alumni Talk", "Lecture Theatre B", 8, 80,
     "Three alumni on their first years in industry.", "compsoc"),
    ("robotics-demo", "Robotics Society Demo Night", "Engineering Atrium", 12, 3,
     "Tiny room, tiny robots: book early.", "union"),
)
# Each team's door volunteer works the door of its team's first event.
DEMO_DOORS = (("compsoc", "cs-door", "python-workshop"), ("union", "su-door", "welcome-fair"))


def seed_events() -> list[str]:
    """Create the demo events that are missing. The create is conditional, so a second run creates nothing."""
    today = utcnow().replace(hour=17, minute=0, second=0, microsecond=0)
    created = []
    for event_id, title, location, in_days, capacity, description, team in DEMO_EVENTS:
        try:
            event_services.event_create(
                event_id=event_id, title=title, location=location, description=description,
                starts_at=today + timedelta(days=in_days), capacity=capacity, created_by="staff", team=team,
            )
        except RegistrationError as error:
            if error.code != "conflict":
                raise
        else:
            created.append(event_id)
    return created


def seed_doors() -> None:
    for team_id, username, event_id in DEMO_DOORS:
        membership = Membership.objects.get(team_id=team_id, user__username=username)
        DoorAssignment.objects.get_or_create(membership=membership, event_id=event_id)


def seed() -> str:
    """``seed_demo``'s hook: create what is missing, then say how much."""
    created = seed_events()
    seed_doors()
    return f"{len(created)} demo event(s)"
