"""Shared helpers of the door's tests."""

from __future__ import annotations

from registrations.checkins import services
from registrations.checkins.models import CheckIn, EventCheckins
from tests.race import WindowHeldOpen
from tests.registrations.helpers import new_key, register

STAFF = "staff2"


def confirmed_ticket(event_id: str, user_id: str) -> str:
    """Register ``user_id`` and return the ticket URL their QR code encodes."""
    outcome = register(event_id, user_id)
    return outcome.data["ticket_url"]


def scan(event_id: str, ticket: str, *, door: str = "A", staff: str = STAFF, key: str | None = None, **kwargs):
    return services.checkin_create(event_id=event_id, ticket_text=ticket, door=door, staff_id=staff,
                                   idempotency_key=key or new_key(),
                                   fingerprint=f"scan:{event_id}:{ticket}:{door}", **kwargs)


def naive_checkin(*, event_id: str, ticket_text: str, door: str, staff_id: str, window: WindowHeldOpen,
                  staff_name: str | None = None, **_):
    """Deliberately broken: read "is it checked in?", then write. Two doors can both read "no"."""
    from registrations.ticket_tokens import ticket_read
    from tems.clock import utcnow

    ticket = ticket_read(text=ticket_text)
    key = CheckIn.key_for(event_id, ticket.registration_id)
    try:
        first = CheckIn.get(*key, consistent_read=True)
        return {"status": "already_checked_in", "checked_in_by": first.checked_in_by, "door": first.door,
                "checked_in_at": first.checked_in_at.isoformat()}
    except CheckIn.DoesNotExist:
        pass
    window()  # the time a real handler spends between its read and its write, held open for a second door
    now = utcnow()
    CheckIn(*key, registration_id=ticket.registration_id, event_id=event_id, user_id=ticket.user_id,
            checked_in_at=now, checked_in_by=staff_name or staff_id, door=door).save()
    EventCheckins(*EventCheckins.key_for(event_id)).update(actions=[EventCheckins.checked_in_count.add(1)])
    return {"status": "checked_in", "checked_in_by": staff_name or staff_id, "door": door,
            "checked_in_at": now.isoformat()}


def real_checkin(**kwargs):
    outcome = services.checkin_create(**kwargs)
    return outcome.data
