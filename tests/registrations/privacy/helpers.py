"""Shared helpers of the privacy tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from django.contrib.auth.models import User

from registrations import selectors
from tems.dynamo import boto3_client, current_config
from tems.identity import user_key
from tests.registrations.helpers import make_event, register

PAST = datetime(2027, 1, 10, 9, 0, tzinfo=UTC)
# Between the past event and the upcoming ones (tests.registrations.helpers.STARTS): when the erasure runs.
ERASED_AT = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)


def person(username: str, email: str) -> User:
    return User.objects.create_user(username, email, "pw-" + username)


def register_person(event_id: str, user: User, **kwargs):
    return register(event_id, user_key(user), user_name=user.get_username(), **kwargs)


def table_dump() -> str:
    """Every item of the table, as one text to search (a raw Scan: nothing of the app's between)."""
    client = boto3_client()
    items = []
    for page in client.get_paginator("scan").paginate(TableName=current_config().table_name, ConsistentRead=True):
        items += page["Items"]
    return json.dumps(items, ensure_ascii=False)


def full_event_with_waiting(user: User, *others: User, capacity: int = 1):
    """An upcoming event whose seats ``user`` holds the first of, with ``others`` after (the last ones waiting)."""
    event = make_event(capacity=capacity)
    first = register_person(event.event_id, user).data
    for other in others:
        register_person(event.event_id, other)
    return event, first


def status_of(event_id: str, user: User) -> str | None:
    claim = selectors.claim_get(event_id=event_id, user_id=user_key(user))
    return claim.status if claim else None


def past_event_with(user: User):
    """An event that has happened, which ``user`` attended: registered while it was still to come."""
    event = make_event(capacity=3, starts_at=PAST)
    return event, register_person(event.event_id, user).data


def seed_answers(pk: str, sk: str, answers: dict[str, str]) -> None:
    """Store ``answers`` ({question: answer}) on an existing item as the custom-questions feature does: JSON text
    of ``[{id, label, value}]`` in ``answers``."""
    stored = json.dumps([{"id": name, "label": name, "value": value} for name, value in answers.items()])
    boto3_client().update_item(
        TableName=current_config().table_name, Key={"PK": {"S": pk}, "SK": {"S": sk}},
        UpdateExpression="SET answers = :a", ConditionExpression="attribute_exists(PK)",
        ExpressionAttributeValues={":a": {"S": stored}})


def seed_registration_answers(event_id: str, registration: dict, user: User, answers: dict[str, str]) -> None:
    """On every item of the registration: both copies and the claim."""
    from registrations.models import Registration, RegistrationClaim

    key = user_key(user)
    for pk, sk in (Registration.user_key_for(key, registration["registration_id"]),
                   Registration.event_key_for(event_id, registration["registration_id"]),
                   RegistrationClaim.key_for(event_id, key)):
        seed_answers(pk, sk, answers)
