"""Shared helpers of the door's tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

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


def race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run every call at the same moment (a barrier), each on its own thread; no call may raise."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = calls[index]()
        except Exception as error:  # asserted empty below: a race must not crash any door
            errors.append(error)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    return results
