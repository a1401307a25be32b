"""Idempotency keys: one user-initiated tap = one key = one applied change, replayed byte for byte.

Semantics (IETF httpapi Idempotency-Key draft, plus what Stripe and Powertools do):
- the client makes a UUID per tap and reuses it for network retries of that tap; the header is the draft's
  Structured Field string (``"<key>"``) or the key bare, the same key either way, 1-255 characters;
- a key is scoped to the authenticated user: another user sending the same key gets their own result;
- the request is fingerprinted (method, route, user, canonical payload); the same key with another request is 422;
- a replay answers the first response's status and body exactly, plus ``Idempotent-Replayed: true``;
- only business outcomes are stored; transient failures are not, so a retry can still succeed;
- every refusal of the key links the published policy (``POLICY_PATH``, README "Idempotency-Key policy").

``tems.idempotency.record`` holds the record and the pieces a service uses to fold it into its own transaction
(``add_completed_record``, and ``replay_from_raw`` for a refusal's image), which costs no extra request;
``tems.idempotency.edge`` holds the request's key and fingerprint and ``@idempotent`` for views whose change
cannot be one transaction. Every public name of both is importable from here.
"""

from tems.idempotency.edge import (
    DEFAULT_POLICY,
    FORM_FIELD,
    MAX_KEY_CHARS,
    TRANSIENT_STATUSES,
    IdempotencyPolicy,
    idempotent,
    key_from_request,
    parse_key,
    request_fingerprint,
    request_payload,
)
from tems.idempotency.record import (
    COMPLETED,
    HEADER,
    IN_PROGRESS,
    POLICY_PATH,
    RECORD_LABEL,
    RECORD_TTL,
    REPLAYED_HEADER,
    REPLAYED_HEADERS,
    IdempotencyRecord,
    StoredResponse,
    add_completed_record,
    completed_record,
    fingerprint,
    idempotency_error,
    policy_url,
    record_expired,
    record_is_absent_or_expired,
    replay_from_raw,
    replay_from_record,
)

__all__ = [
    "COMPLETED", "DEFAULT_POLICY", "FORM_FIELD", "HEADER", "IN_PROGRESS", "MAX_KEY_CHARS", "POLICY_PATH",
    "RECORD_LABEL", "RECORD_TTL", "REPLAYED_HEADER", "REPLAYED_HEADERS", "TRANSIENT_STATUSES", "IdempotencyPolicy",
    "IdempotencyRecord", "StoredResponse", "add_completed_record", "completed_record", "fingerprint",
    "idempotency_error", "idempotent", "key_from_request", "parse_key", "policy_url", "record_expired",
    "record_is_absent_or_expired", "replay_from_raw", "replay_from_record", "request_fingerprint", "request_payload",
]
