"""The demo's term of events (``seed_demo``): about sixty (``TEMS_DEMO_TERM_EVENTS``) over six weeks, in every
category, some public, some online, some full with a waiting list, one whose freed seat is on offer and one
cancelled, so ``make run`` shows TEMS in use. Every event has a fixed id and every write a fixed key: a second
run creates nothing."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User

from registrations import services
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.events.models import CATEGORIES
from tems.clock import utcnow
from tems.demo import DEMO_TEAMS
from tems.identity import user_key
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
# The rest of the term: (title, category, organizer, venue or "" for online only), one every ~17 hours.
TERM = (
    ("Chess Club Open Evening", "social", "Chess Society", "Student Union, room 3"),
    ("Research Skills: Finding Sources", "workshop", "Library", "Library Seminar Room"),
    ("Five-a-side Football League", "sport", "Sports Centre", "Sports Hall"),
    ("CV Clinic", "careers", "Careers Service", "Careers Hub"),
    ("Climate Science Public Lecture", "talk", "Physics Department", "Lecture Theatre A"),
    ("Pottery Taster Session", "workshop", "Arts Centre", "Arts Centre Studio"),
    ("Jazz Night", "social", "Music Society", "The Cellar Bar"),
    ("Machine Learning Reading Group", "talk", "Code Club", ""),
    ("Yoga for Beginners", "sport", "Sports Centre", "Studio 2"),
    ("Interview Practice", "careers", "Careers Service", ""),
    ("Film Society: Classic Noir", "social", "Film Society", "Cinema Room"),
    ("Git and GitHub Workshop", "workshop", "Code Club", "Computing Lab 1"),
    ("Ethics of AI Debate", "talk", "Philosophy Society", "Debating Chamber"),
    ("Climbing Wall Induction", "sport", "Sports Centre", "Climbing Wall"),
    ("Startup Founders Panel", "careers", "Enterprise Office", "Innovation Hub"),
    ("Volunteering Fair", "other", "Students Union", "Great Hall"),
)
# A society's event waiting for the union's approval (tems/demo.py, DEMO_OVERSIGHT): su-events publishes it.
DEMO_DRAFT = dict(event_id="winter-hackathon", title="Winter Hackathon", location="Computing Lab 2", capacity=40,
                  description="24 hours, teams of four, pizza at midnight.", category="workshop",
                  organizer=None, public=True, team="compsoc")
WEEKS = 6
TEAM_NAMES = {team_id: name for team_id, name, _ in DEMO_TEAMS}
STAFF = "staff"


def _key(*parts: str) -> str:
    """A fixed idempotency key per demo write, so running the seed again replays instead of writing."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "tems-demo:" + ":".join(parts)))


def _term(today: datetime) -> list[dict]:
    """Every demo event's fields, in start order."""
    events = [dict(event_id=event_id, title=title, location=location, starts_at=today + timedelta(days=in_days),
                   capacity=capacity, description=description, category=category, organizer=TEAM_NAMES[team],
                   public=True, team=team)
              for (event_id, title, location, in_days, capacity, description, team), category in zip(
                  DEMO_EVENTS, ("social", "workshop", "careers", "talk"), strict=True)]
    count = max(settings.TEMS_DEMO_TERM_EVENTS, 21) - len(DEMO_EVENTS)
    for number in range(count):
        title, category, organizer, venue = TERM[number % len(TERM)]
        repeat = number // len(TERM)
        # Spread over the weeks, at the hours events are held.
        starts = (today + timedelta(days=1 + number * (WEEKS * 7 - 2) // count)).replace(
            hour=(10, 13, 15, 18, 19, 12, 17)[number % 7])
        events.append(dict(
            event_id=f"term-{number:02d}", title=title if not repeat else f"{title} ({repeat + 1})",
            location=venue, starts_at=starts.replace(minute=0), capacity=(2, 12, 30, 60)[number % 4],
            description=f"{dict(CATEGORIES)[category]} run by {organizer}.", category=category, organizer=organizer,
            public=number % 3 != 1, online_url="" if venue else "https://meet.example.org/tems-demo",
            ends_at=starts.replace(minute=0) + timedelta(hours=2), team=("compsoc", "union")[number % 2]))
    events[8]["offer_hours"] = 24  # a full one in offer mode: its freed seat is offered below
    return events


def _register(event_id: str, user_id: str, name: str) -> dict | None:
    try:
        return services.registration_create(event_id=event_id, user_id=user_id, user_name=name,
                                            idempotency_key=_key("register", event_id, user_id),
                                            fingerprint=f"demo:{event_id}:{user_id}").data
    except RegistrationError:
        return None


def _people() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(user key, name) of the demo's student accounts, and of guests who fill the seats."""
    students = [(user_key(user), user.get_full_name() or user.username)
                for user in User.objects.filter(is_staff=False, email__endswith="@demo.tems.invalid").order_by("pk")]
    return students, [(f"demo-guest-{n:02d}", f"Guest {n}") for n in range(1, 40)]


def _fill(event: dict, students: list[tuple[str, str]], guests: list[tuple[str, str]]) -> None:
    """The term in use: a small event full with two of the demo's students waiting, a bigger one a third full."""
    capacity = int(event["capacity"])
    people = guests[:capacity] + students[:2] if capacity <= 3 else (students + guests)[:capacity // 3]
    for user_id, name in people:
        _register(event["event_id"], user_id, name)


# Each team's door volunteer works the door of its team's first event.
DEMO_DOORS = (("compsoc", "cs-door", "python-workshop"), ("union", "su-door", "welcome-fair"))


def seed_events() -> list[str]:
    """Create the demo events that are missing, with their registrations. The create is conditional, so a second
    run creates nothing."""
    today = utcnow().replace(hour=17, minute=0, second=0, microsecond=0)
    students, guests = _people()
    term = _term(today)
    created = []
    for event in term:
        try:
            event_services.event_create(created_by=STAFF, **event)
        except RegistrationError as error:
            if error.code != "conflict":
                raise
            continue
        created.append(event["event_id"])
        _fill(event, students, guests)
    offered = term[8]["event_id"]
    if offered in created:
        # A seat freed in offer mode goes to the head of the waiting list (a demo student) as an offer.
        holder = _register(offered, *guests[0])
        if holder is not None:
            services.registration_cancel(user_id=guests[0][0], registration_id=holder["registration_id"])
    try:
        event_services.event_create(created_by="cs-events", starts_at=today + timedelta(days=20), draft=True,
                                    **DEMO_DRAFT)
    except RegistrationError as error:
        if error.code != "conflict":
            raise
    else:
        created.append(DEMO_DRAFT["event_id"])
    doomed = term[20]["event_id"]
    if doomed in created:
        event_services.event_cancel_once(event_id=doomed, user_id=STAFF, cancelled_by=STAFF,
                                         idempotency_key=_key("cancel", doomed), fingerprint="demo:cancel")
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
