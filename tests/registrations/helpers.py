"""Shared helpers of the registration tests."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from registrations import services
from tems.invariants import check_all
from tems.lab.techniques.registration import registration_fingerprint

STARTS = datetime(2027, 5, 1, 9, 0, tzinfo=UTC)


def new_key() -> str:
    return str(uuid.uuid4())


def make_event(capacity: int = 5, **overrides):
    fields = {"title": "Open day", "starts_at": STARTS, "capacity": capacity, "created_by": "staff"}
    return services.event_create(**{**fields, **overrides})


def register(event_id: str, user_id: str, key: str | None = None, **kwargs):
    return services.registration_create(
        event_id=event_id, user_id=user_id, idempotency_key=key or new_key(),
        fingerprint=registration_fingerprint(event_id=event_id, user_id=user_id), **kwargs,
    )


def assert_invariants_clean() -> None:
    problems = {name: found for name, found in check_all().items() if found}
    assert problems == {}
