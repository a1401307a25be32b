"""Shared helpers of the door's tests."""

from __future__ import annotations

from registrations.checkins import services
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
