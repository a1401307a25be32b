"""Idempotency keys: one user-initiated tap = one key = one applied change, replayed byte for byte.

Semantics (IETF httpapi Idempotency-Key draft, plus what Stripe and Powertools do):
- the client makes a UUID per tap and reuses it for network retries of that tap;
- a key is scoped to the authenticated user: another user sending the same key gets their own result;
- the request is fingerprinted (method, route, user, canonical payload); the same key with another request is 422;
- a replay answers the first response's status and body exactly, plus ``Idempotent-Replayed: true``;
- only business outcomes are stored; transient failures are not, so a retry can still succeed.

This module holds the record and the pieces a service uses to fold the record into its own transaction
(``completed_record`` + ``record_is_absent_or_expired`` + ``replay_from_raw``), which costs no extra request.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.http import HttpRequest, HttpResponse
from pynamodb.attributes import NumberAttribute, TTLAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.expressions.condition import Condition
from pynamodb.models import Model

from tems.clock import utcnow
from tems.dynamo import TableMeta
from tems.errors import DomainError

HEADER = "Idempotency-Key"
FORM_FIELD = "idempotency_key"
REPLAYED_HEADER = "Idempotent-Replayed"
# Long enough to cover any client's retry schedule; the key is for "don't apply this tap twice", not for history.
RECORD_TTL = timedelta(hours=24)

COMPLETED = "COMPLETED"
IN_PROGRESS = "INPROGRESS"


class IdempotencyRecord(Model):
    """``IDEMPOTENCY#<user>#<key>`` / ``RECORD``: the stored outcome of one tap."""

    class Meta(TableMeta):
        pass

    SK = "RECORD"

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK", default=SK)
    entity = UnicodeAttribute(default="IdempotencyRecord")
    user_id = UnicodeAttribute()
    key = UnicodeAttribute()
    fingerprint = UnicodeAttribute()
    status = UnicodeAttribute()
    response_status = NumberAttribute(null=True)
    response_body = UnicodeAttribute(null=True)
    response_content_type = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute(default=utcnow)
    expires_at = TTLAttribute()
    # For INPROGRESS records of the generic @idempotent wrapper: who holds the lease, and until when.
    attempt_id = UnicodeAttribute(null=True)
    lease_expires_at = UTCDateTimeAttribute(null=True)

    @staticmethod
    def pk_for(user_id: str, key: str) -> str:
        return f"IDEMPOTENCY#{user_id}#{key}"

    @classmethod
    def key_for(cls, user_id: str, key: str) -> tuple[str, str]:
        return cls.pk_for(user_id, key), cls.SK


def parse_key(value: str | None) -> str:
    """The canonical form of a client's idempotency key; DomainError('invalid') if missing or not a UUID."""
    if not value:
        raise DomainError("invalid", f"The {HEADER} header is required: send a new UUID for each tap.")
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise DomainError("invalid", f"The {HEADER} must be a UUID, got {value[:60]!r}.") from None


def key_from_request(request: HttpRequest) -> str:
    """The key from the header (API, HTMX) or, for a plain form post without JavaScript, the form field."""
    return parse_key(request.headers.get(HEADER) or request.POST.get(FORM_FIELD))


def fingerprint(*, method: str, route: str, user_id: str, payload: Any) -> str:
    canonical = json.dumps(
        {"method": method.upper(), "route": route, "user": user_id, "payload": payload},
        sort_keys=True, separators=(",", ":"), default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: str
    content_type: str = "application/json"

    def to_http(self, *, replayed: bool) -> HttpResponse:
        response = HttpResponse(self.body.encode(), status=self.status, content_type=self.content_type)
        if replayed:
            response[REPLAYED_HEADER] = "true"
        return response

    @classmethod
    def json(cls, data: Any, *, status: int) -> StoredResponse:
        from django.core.serializers.json import DjangoJSONEncoder

        return cls(status, json.dumps(data, cls=DjangoJSONEncoder))


def completed_record(*, user_id: str, key: str, fingerprint: str, response: StoredResponse,
                     now: datetime | None = None) -> IdempotencyRecord:
    """A COMPLETED record holding ``response``, to be saved in the same transaction as the change it describes."""
    now = now or utcnow()
    return IdempotencyRecord(
        *IdempotencyRecord.key_for(user_id, key),
        user_id=user_id, key=key, fingerprint=fingerprint, status=COMPLETED,
        response_status=response.status, response_body=response.body, response_content_type=response.content_type,
        created_at=now, expires_at=now + RECORD_TTL,
    )


def record_is_absent_or_expired(now: datetime | None = None) -> Condition:
    # DynamoDB deletes expired items lazily (up to days later), so an expired record must not block a new tap.
    return IdempotencyRecord.pk.does_not_exist() | (IdempotencyRecord.expires_at < (now or utcnow()))


def replay_from_record(record: IdempotencyRecord, *, fingerprint: str) -> StoredResponse | None:
    """The stored response of a COMPLETED record (None while it is still in progress).

    Raises DomainError('unprocessable') when the key was first used for a different request.
    """
    if record.fingerprint != fingerprint:
        raise DomainError(
            "unprocessable",
            f"This {HEADER} was already used for a different request; make a new key for a new action.",
        )
    if record.status != COMPLETED:
        return None
    return StoredResponse(int(record.response_status), record.response_body, record.response_content_type)


def replay_from_raw(raw_item: dict[str, Any], *, fingerprint: str) -> StoredResponse | None:
    """Like ``replay_from_record`` for the ALL_OLD image a cancelled transaction returned."""
    return replay_from_record(IdempotencyRecord.from_raw_data(raw_item), fingerprint=fingerprint)
