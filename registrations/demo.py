from datetime import timedelta

from registrations.errors import RegistrationError
from registrations.events import services as event_services
from tems.clock import utcnow

DEMO_EVENTS = (
    ("welcome-fair", "Welcome Week Fair", "Great Hall", 3, 200,
     "Meet every society, club and service in one afternoon."),
    ("python-workshop", "Intro to Python Workshop", "Computing Lab 2", 5, 10,
     "Hands-on, laptops provided. Seats are limited."),
    ("career-talk", "Careers in Data: Alumni Talk", "Lecture Theatre B", 8, 80,
     "Three alumni on their first years in industry."),
    ("robotics-demo", "Robotics Society Demo Night", "Engineering Atrium", 12, 3,
     "Tiny room, tiny robots: book early."),
)


def seed_events() -> list[str]:
    """Create the demo events that are missing. The create is conditional, so a second run creates nothing."""
    today = utcnow().replace(hour=17, minute=0, second=0, microsecond=0)
    created = []
    for event_id, title, location, in_days, capacity, description in DEMO_EVENTS:
        try:
            event_services.event_create(
                event_id=event_id, title=title, location=location, description=description,
                starts_at=today + timedelta(days=in_days), capacity=capacity, created_by="staff",
            )
        except RegistrationError as error:
            if error.code != "conflict":
                raise
        else:
            created.append(event_id)
    return created


def seed() -> str:
    """``seed_demo``'s hook: create what is missing, then say how much."""
    return f"{len(seed_events())} demo event(s)"
