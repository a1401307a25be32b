"""Shared helpers of the registration tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from lab.techniques.registration import registration_fingerprint
from registrations import services, write_rules
from registrations.events import services as event_services
from registrations.seating.models import SeatShard
from registrations.services import create as registration_service

STARTS = datetime(2027, 5, 1, 9, 0, tzinfo=UTC)


def new_key() -> str:
    return str(uuid.uuid4())


def make_event(capacity: int = 5, **overrides):
    fields = {"title": "Open day", "starts_at": STARTS, "capacity": capacity, "created_by": "staff"}
    return event_services.event_create(**{**fields, **overrides})


def register(event_id: str, user_id: str, key: str | None = None, **kwargs):
    return services.registration_create(
        event_id=event_id, user_id=user_id, idempotency_key=key or new_key(),
        fingerprint=registration_fingerprint(event_id=event_id, user_id=user_id), **kwargs,
    )


def spaced_clock(*, start: datetime | None = None) -> Callable[[], datetime]:
    """A clock for joins that must take their tickets in the order they are made, one block each: every call is
    two seconds after the last (past ``BLOCK_SECONDS``, so no lane hands a later joiner a ticket of an older
    block), starting five minutes ago, so the requests after them run on the real clock."""
    moments = iter(range(10**6))
    base = start or (datetime.now(UTC) - timedelta(minutes=5))
    return lambda: base + timedelta(seconds=2 * next(moments))


def seat_taken_under(monkeypatch, condition) -> None:
    """A deliberately broken confirmed registration: its seat is taken under ``condition(attempt)`` instead of
    the service's own (each broken variant drops the one clause its test must show is needed)."""
    original = registration_service.confirm_transaction
    seat = write_rules.SEAT

    def broken(attempt, shard):
        transaction, response = original(attempt, shard)
        transaction._ops["update"] = [(label, apply) for label, apply in transaction._ops["update"] if label != seat]
        transaction._labels.discard(seat)
        transaction.update(seat, SeatShard(*SeatShard.key_for(attempt.event_id, shard)),
                           actions=[SeatShard.taken.add(1)], condition=condition(attempt),
                           return_old_on_failure=True)
        return transaction, response

    monkeypatch.setattr(registration_service, "confirm_transaction", broken)
