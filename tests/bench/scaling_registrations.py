"""Scaling paths of the registrations app for the harness in tests/bench/scaling.py (issue 10).

``PATHS[name](n)`` seeds the freshly configured, empty table with ``n`` items of the kind the path reads and
returns a callable that makes ONE request as a client would (Django's test Client, logged in). Seeding writes
the items the services would have written (BatchWriteItem, 25 a request): going through the services would
take one transaction per item and measure the seeding, not the path.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.test import Client

from registrations import attendees
from registrations.events.models import Event
from registrations.models import CONFIRMED, WAITLISTED, Registration, RegistrationClaim, WaitlistEntry
from registrations.seating import positions
from registrations.seating.gate import CLOSED
from registrations.seating.models import SeatGate, SeatShard, WaitlistDepartures, WaitlistQueue
from tems.identity import user_key

STARTS = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
# Pages of the same length at every size, so the 10-item table fills its page as the larger ones do.
PAGE = 10
# One ticket in this many left the waiting list before the measured one: the departure tree is not empty.
DEPARTED_EVERY = 11


def _client(*, staff: bool = False) -> tuple[Client, str]:
    user = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:10]}", is_staff=staff)
    client = Client()
    client.force_login(user)
    return client, user_key(user)


def _event(event_id: str, *, capacity: int, registered: int = 0, waiting: int = 0, seq: int = 0) -> list:
    """An event as ``event_create`` makes it, with one seat shard (``registered`` seats taken) whose lane holds
    ``waiting`` entries, its gate and its queue (``seq`` tickets handed out, all in the lane's installed block)."""
    closed = CLOSED if waiting else 0
    claims = {"claim_last": {"0": seq}, "claim_size": {"0": seq}, "claim_from": {"0": 0}, "claim_at": {"0": 0}} \
        if seq else {"claim_last": {}, "claim_size": {}, "claim_from": {}, "claim_at": {}}
    return [
        Event(*Event.key_for(event_id), event_id=event_id, title=f"Bench {event_id}", starts_at=STARTS,
              capacity=capacity, seat_shards=1, sliced=capacity, gsi1pk=Event.COLLECTION,
              gsi1sk=Event.listing_key(STARTS, event_id), version=1),
        SeatShard(*SeatShard.key_for(event_id, 0), event_id=event_id, shard=0, shards=1, capacity=capacity,
                  taken=registered, starts_at=STARTS, gate=closed, opened=0, waiting=waiting,
                  **({"lane_next": seq + 1, "lane_end": seq + 1, "lane_size": seq, "lane_at": STARTS} if seq else {})),
        SeatGate(*SeatGate.key_for(event_id), event_id=event_id, state=closed, epoch=0, opened=0, shards=1),
        WaitlistQueue(*WaitlistQueue.key_for(event_id), event_id=event_id, seq=seq, left=0, **claims),
    ]


def _entry(event_id: str, ticket: int, **fields) -> WaitlistEntry:
    """A waiting registration's entry in lane 0, carrying the registration (its event-side copy)."""
    name = fields.get("user_name") or fields["user_id"]
    return WaitlistEntry(*WaitlistEntry.key_for(event_id, ticket, 0), event_id=event_id, ticket=ticket, lane=0,
                         status=WAITLISTED, **attendees.index_fields(event_id=event_id, name=name,
                                                                    registration_id=fields["registration_id"]),
                         **fields)


def _registration_id(n: int) -> str:
    # Time-ordered like services.new_registration_id: later n, later id.
    return f"{n:012x}{uuid.uuid4().hex[:20]}"


def _save_all(items: list) -> None:
    by_model: dict[type, list] = {}
    for item in items:
        by_model.setdefault(type(item), []).append(item)
    for model, models in by_model.items():
        with model.batch_write() as batch:
            for item in models:
                batch.save(item)


def waitlist_position(n: int) -> Callable[[], object]:
    """The student is at position ``n`` of one event's waiting list; GET /api/me/registrations."""
    client, me = _client()
    _seed_waitlist(n, me)
    return lambda: client.get(f"/api/me/registrations?limit={PAGE}")


def waitlist_position_read(n: int) -> Callable[[], object]:
    """The position read alone (the issue's bound: <= 2 requests, <= 10 RCU at position 10,000)."""
    _, me = _client()
    event_id, ticket = _seed_waitlist(n, me)
    return lambda: positions.position(event_id=event_id, ticket=ticket)


def _seed_waitlist(n: int, me: str) -> tuple[str, int]:
    """An event whose waiting list holds ``me`` at position ``n``, behind departures; returns (event, ticket)."""
    event_id = uuid.uuid4().hex[:12]
    departed = (n - 1) // (DEPARTED_EVERY - 1)  # so that n - 1 tickets before mine are still waiting
    last = n + departed
    gone = [t for t in range(1, last) if t % DEPARTED_EVERY == 0][:departed]
    gone_set = set(gone)
    live = [t for t in range(1, last + 1) if t not in gone_set]
    assert len(live) == n and live[-1] == last
    items: list = _event(event_id, capacity=0, waiting=n, seq=last)
    for ticket in live:
        user = me if ticket == last else f"waiting-{ticket}"
        registration_id = _registration_id(ticket)
        items.append(_entry(event_id, ticket, registration_id=registration_id, user_id=user,
                            created_at=STARTS - timedelta(days=1)))
        if ticket == last:
            items.append(Registration(*Registration.user_key_for(me, registration_id), registration_id=registration_id,
                                      event_id=event_id, user_id=me, status=WAITLISTED, ticket=ticket, lane=0,
                                      created_at=STARTS - timedelta(days=1)))
    nodes: dict[tuple[int, int], Counter] = {}
    for (level, block, digit), amount in positions.departure_nodes(gone).items():
        nodes.setdefault((level, block), Counter())[digit] += amount
    for (level, block), digits in nodes.items():
        items.append(WaitlistDepartures(*WaitlistDepartures.key_for(event_id, level, block),
                                        **{WaitlistDepartures.digit_name(d): c for d, c in digits.items()}))
    _save_all(items)
    return event_id, last


def my_registrations(n: int) -> Callable[[], object]:
    """The student holds ``n`` registrations (one in four waitlisted), one event each; GET the first page."""
    client, me = _client()
    items: list = []
    for k in range(n):
        event_id = f"b{k:011d}"
        waitlisted = k % 4 == 0
        items += _event(event_id, capacity=1, registered=1, waiting=1 if waitlisted else 0,
                        seq=1 if waitlisted else 0)
        registration_id = _registration_id(k)
        fields = {"registration_id": registration_id, "event_id": event_id, "user_id": me,
                  "status": WAITLISTED if waitlisted else CONFIRMED, "ticket": 1 if waitlisted else None,
                  "lane": 0 if waitlisted else None, "shard": None if waitlisted else 0,
                  "created_at": STARTS - timedelta(days=1)}
        items.append(Registration(*Registration.user_key_for(me, registration_id), **fields))
    _save_all(items)
    return lambda: client.get(f"/api/me/registrations?limit={PAGE}")


def attendee_list(n: int) -> Callable[[], object]:
    """An event with ``n`` attendees (one in four waitlisted); staff GET the first page of the API."""
    client, _ = _client(staff=True)
    event_id = uuid.uuid4().hex[:12]
    waiting = n // 4
    items: list = _event(event_id, capacity=n - waiting, registered=n - waiting, waiting=waiting, seq=waiting)
    ticket = 0
    for k in range(n):
        user = f"student-{k:06d}"
        registration_id = _registration_id(k)
        waitlisted = k % 4 == 0 and ticket < waiting
        if waitlisted:
            ticket += 1
        created_at = STARTS - timedelta(days=1)
        if waitlisted:
            items.append(_entry(event_id, ticket, registration_id=registration_id, user_id=user, user_name=user,
                                created_at=created_at))
            fields = {"status": WAITLISTED, "ticket": ticket, "lane": 0}
        else:
            fields = {"status": CONFIRMED, "shard": 0}
            items.append(Registration(*Registration.event_key_for(event_id, registration_id), **fields,
                                      registration_id=registration_id, event_id=event_id, user_id=user,
                                      user_name=user, created_at=created_at,
                                      **attendees.index_fields(event_id=event_id, name=user,
                                                               registration_id=registration_id)))
        items.append(RegistrationClaim(*RegistrationClaim.key_for(event_id, user), registration_id=registration_id,
                                       event_id=event_id, user_id=user, user_name=user, created_at=created_at,
                                       **fields))
    _save_all(items)
    return lambda: client.get(f"/api/events/{event_id}/attendees?limit={PAGE}")


# The bound for one position read at position 10,000: at most 2 requests and 10 RCU. The whole
# GET /api/me/registrations around it adds its Query and the events' BatchGetItem.
BOUNDS = {"waitlist position (the read alone)": (2, 10.0),
          "waitlist position (GET /api/me/registrations)": (3, 10.0)}

PATHS: dict[str, Callable[[int], Callable[[], object]]] = {
    "waitlist position (GET /api/me/registrations)": waitlist_position,
    "waitlist position (the read alone)": waitlist_position_read,
    "my registrations": my_registrations,
    "attendee list": attendee_list,
}
