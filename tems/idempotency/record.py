"""The idempotency record: one user's key, the request's fingerprint and the stored outcome of its first tap.

A service folds the record into its own transaction (``add_completed_record``, and ``replay_from_raw`` for the
image a refusal returns), which costs no extra request: the record is born COMPLETED with the business change.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.http import HttpResponse
from pynamodb.attributes import NumberAttribute, TTLAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.expressions.condition import Condition

from tems import telemetry
from tems.clock import utcnow
from tems.dynamo import TableModel
from tems.errors import DomainError

if TYPE_CHECKING:
    from tems.transactions import LabelledTransaction

logger = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
# Long enough to cover any client's retry schedule; the key is for "don't apply this tap twice", not for history.
RECORD_TTL = timedelta(hours=24)
# Where the published policy lives (tems.views.idempotency_policy): every idempotency error links to it, so the
# path must never change.
POLICY_PATH = "/idempotency-key/"
POLICY_TITLE = "Idempotency-Key problem"


def policy_url() -> str:
    return settings.TEMS_PUBLIC_URL.rstrip("/") + POLICY_PATH


def idempotency_error(code: str, detail: str, **extra: Any) -> DomainError:
    """A refusal of the key itself (malformed, reused, in flight): problem+json whose ``type`` is the policy."""
    return DomainError(code, detail, type=policy_url(), title=POLICY_TITLE, **extra)


COMPLETED = "COMPLETED"
IN_PROGRESS = "INPROGRESS"
# The label of the record in a service's transaction: a cancellation's reason for it is read back by this name.
RECORD_LABEL = "idempotency"


class IdempotencyRecord(TableModel):
    """``IDEMPOTENCY#<user>#<key>`` / ``RECORD``: the stored outcome of one tap."""

    SK = "RECORD"

    sk = UnicodeAttribute(range_key=True, attr_name="SK", default=SK)
    user_id = UnicodeAttribute()
    key = UnicodeAttribute()
    fingerprint = UnicodeAttribute()
    status = UnicodeAttribute()
    response_status = NumberAttribute(null=True)
    response_body = UnicodeAttribute(null=True)
    response_content_type = UnicodeAttribute(null=True)
    # The few headers a replay must repeat (a redirect's Location, htmx's HX-* instructions), as JSON.
    response_headers = UnicodeAttribute(null=True)
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


def fingerprint(*, method: str, route: str, user_id: str, payload: Any) -> str:
    canonical = json.dumps(
        {"method": method.upper(), "route": route, "user": user_id, "payload": payload},
        sort_keys=True, separators=(",", ":"), default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


# Headers that are part of an outcome and so are stored with it; everything else is recomputed per response.
REPLAYED_HEADERS = ("Location", "HX-Redirect", "HX-Location", "HX-Trigger", "HX-Retarget", "HX-Reswap")


JSON_CONTENT_TYPE = "application/json"


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: str
    content_type: str = JSON_CONTENT_TYPE
    headers: tuple[tuple[str, str], ...] = field(default=())

    def to_http(self, *, replayed: bool) -> HttpResponse:
        response = HttpResponse(self.body.encode(), status=self.status, content_type=self.content_type)
        for name, value in self.headers:
            response[name] = value
        if replayed:
            response[REPLAYED_HEADER] = "true"
        return response

    @classmethod
    def from_http(cls, response: HttpResponse) -> StoredResponse:
        return cls(
            response.status_code, response.content.decode(response.charset or "utf-8"),
            response.get("Content-Type", "application/json"),
            tuple((name, response[name]) for name in REPLAYED_HEADERS if response.has_header(name)),
        )

    @classmethod
    def json(cls, data: Any, *, status: int) -> StoredResponse:
        from django.core.serializers.json import DjangoJSONEncoder

        # Compact and in UTF-8: a stored answer is written with every change it describes, in write units per
        # KB, so the spaces and \uXXXX escapes of json.dumps' defaults are bytes paid on the hot path.
        return cls(status, json.dumps(data, cls=DjangoJSONEncoder, separators=(",", ":"), ensure_ascii=False))


def completed_record(*, user_id: str, key: str, fingerprint: str, response: StoredResponse,
                     now: datetime | None = None) -> IdempotencyRecord:
    """A COMPLETED record holding ``response``, to be saved in the same transaction as the change it describes."""
    now = now or utcnow()
    return IdempotencyRecord(
        *IdempotencyRecord.key_for(user_id, key),
        user_id=user_id, key=key, fingerprint=fingerprint, status=COMPLETED,
        response_status=response.status, response_body=response.body,
        # The usual JSON answer leaves its content type out: a replay assumes it (bytes saved on every write).
        response_content_type=None if response.content_type == JSON_CONTENT_TYPE else response.content_type,
        response_headers=json.dumps(response.headers) if response.headers else None,
        created_at=now, expires_at=now + RECORD_TTL,
    )


def record_is_absent_or_expired(now: datetime | None = None) -> Condition:
    # DynamoDB deletes expired items lazily (up to days later), so an expired record must not block a new tap.
    return IdempotencyRecord.pk.does_not_exist() | (IdempotencyRecord.expires_at < (now or utcnow()))


def record_expired(record: IdempotencyRecord, now: datetime | None = None) -> bool:
    """``record_is_absent_or_expired`` for a record read: expired ones answer nothing and block no new tap."""
    return record.expires_at is not None and record.expires_at < (now or utcnow())


def add_completed_record(transaction: LabelledTransaction, *, user_id: str, key: str, fingerprint: str,
                         response: StoredResponse, now: datetime | None = None) -> None:
    """Add the tap's COMPLETED record holding ``response`` to ``transaction``, labelled ``RECORD_LABEL``.

    The record is written only where no live record of the key is. When the key was used before, the
    transaction is cancelled with a ConditionalCheckFailed under ``RECORD_LABEL`` carrying the stored record
    (ALL_OLD), which ``replay_from_raw`` turns into the first answer.
    """
    now = now or utcnow()
    transaction.save(RECORD_LABEL,
                     completed_record(user_id=user_id, key=key, fingerprint=fingerprint, response=response, now=now),
                     condition=record_is_absent_or_expired(now), return_old_on_failure=True)


def replay_from_record(record: IdempotencyRecord, *, fingerprint: str) -> StoredResponse | None:
    """The stored response of a COMPLETED record (None while it is still in progress).

    Raises DomainError('unprocessable') when the key was first used for a different request.
    """
    if record.fingerprint != fingerprint:
        raise idempotency_error(
            "unprocessable",
            f"This {HEADER} was already used for a different request; make a new key for a new action.",
        )
    if record.status != COMPLETED:
        return None
    telemetry.note(replayed=True)  # every replay is answered from here: the request's line says so, once
    headers = tuple(tuple(pair) for pair in json.loads(record.response_headers)) if record.response_headers else ()
    return StoredResponse(int(record.response_status), record.response_body,
                          record.response_content_type or JSON_CONTENT_TYPE, headers)


def replay_from_raw(raw_item: dict[str, Any], *, fingerprint: str) -> StoredResponse | None:
    """Like ``replay_from_record`` for the ALL_OLD image a cancelled transaction returned."""
    return replay_from_record(IdempotencyRecord.from_raw_data(raw_item), fingerprint=fingerprint)


def replay_if_stored(*, user_id: str, key: str, fingerprint: str) -> StoredResponse | None:
    """The key's stored response, read to explain a refusal of input that a retry would otherwise meet anew (what
    it is checked against changed since the first attempt); None if the key holds no completed answer. Raises
    as ``replay_from_record``."""
    try:
        record = IdempotencyRecord.get(*IdempotencyRecord.key_for(user_id, key), consistent_read=True)
    except IdempotencyRecord.DoesNotExist:
        return None
    return replay_from_record(record, fingerprint=fingerprint)


# --- @idempotent: for unsafe views whose change cannot be folded into one transaction -----------------------
