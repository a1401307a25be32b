"""Writes of the registrations app. Each promise below is kept by a DynamoDB condition, never a prior read."""

from __future__ import annotations

import uuid
from datetime import datetime

from pynamodb.exceptions import PutError, UpdateError

from registrations.errors import RegistrationError
from registrations.models import Event
from registrations.selectors import event_get, event_to_dict
from tems.clock import utcnow

CONDITION_FAILED = "ConditionalCheckFailedException"


def new_event_id() -> str:
    return uuid.uuid4().hex[:12]


def event_create(
    *,
    title: str,
    description: str = "",
    location: str = "",
    starts_at: datetime,
    capacity: int,
    created_by: str,
    event_id: str | None = None,
) -> Event:
    """Create an event. Raises RegistrationError('conflict') if ``event_id`` is taken (the put is conditional)."""
    event_id = event_id or new_event_id()
    now = utcnow()
    event = Event(
        *Event.key_for(event_id),
        event_id=event_id,
        title=title,
        description=description,
        location=location,
        starts_at=starts_at,
        capacity=capacity,
        created_at=now,
        created_by=created_by,
        updated_at=now,
        updated_by=created_by,
        gsi1sk=Event.listing_key(starts_at, event_id),
    )
    try:
        # The version attribute makes PynamoDB send attribute_not_exists(version): a second create is refused.
        event.save()
    except PutError as error:
        if error.cause_response_code == CONDITION_FAILED:
            raise RegistrationError("conflict", f"An event with id {event_id!r} already exists.") from None
        raise
    return event


def event_update(
    *,
    event_id: str,
    expected_version: int,
    title: str,
    description: str,
    location: str,
    starts_at: datetime,
    capacity: int,
    updated_by: str,
) -> Event:
    """Apply an edit only if the event is still at ``expected_version``; one conditional UpdateItem.

    Raises RegistrationError: 'not_found'; 'conflict' (someone saved in between; ``extra['current']`` holds
    the stored event so the page can show theirs next to yours); 'invalid' (capacity below seats taken).
    """
    event = Event(*Event.key_for(event_id), version=expected_version)
    actions = [
        Event.title.set(title),
        Event.description.set(description),
        Event.location.set(location),
        Event.starts_at.set(starts_at),
        Event.capacity.set(capacity),
        Event.gsi1sk.set(Event.listing_key(starts_at, event_id)),
        Event.updated_at.set(utcnow()),
        Event.updated_by.set(updated_by),
    ]
    # Seats already given cannot be taken back by shrinking the event.
    condition = Event.pk.exists() & (Event.registered_count <= capacity)
    try:
        event.update(actions=actions, condition=condition)
    except UpdateError as error:
        if error.cause_response_code != CONDITION_FAILED:
            raise
        # The write was refused; this read only explains why, it decides nothing.
        current = event_get(event_id=event_id)
        if current.version != expected_version:
            raise RegistrationError(
                "conflict",
                f"{current.updated_by or 'Someone'} changed this event after you opened it "
                f"(version {expected_version} -> {current.version}). Nothing of yours was saved.",
                current=event_to_dict(current),
            ) from None
        raise RegistrationError(
            "invalid",
            f"Capacity cannot go below the {current.registered_count} seats already taken.",
            errors={"capacity": [f"Must be at least {current.registered_count}."]},
        ) from None
    return event
