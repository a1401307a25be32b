"""Idempotency at the HTTP edge: the key and fingerprint of a request, and ``@idempotent`` for views whose
change cannot be one transaction (see its docstring).
"""

from __future__ import annotations

import functools
import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import http_sf
from django.http import HttpRequest, HttpResponse
from pynamodb.expressions.condition import Condition

from tems import telemetry
from tems.api import JSON_CONTENT_TYPE, loads_json, problem_from_error
from tems.clock import utcnow
from tems.errors import DomainError
from tems.idempotency.record import (
    COMPLETED,
    HEADER,
    IN_PROGRESS,
    RECORD_TTL,
    IdempotencyRecord,
    StoredResponse,
    fingerprint,
    idempotency_error,
    record_is_absent_or_expired,
    replay_from_record,
)
from tems.identity import user_key
from tems.transactions import LabelledTransaction, TransactionCancelled

logger = logging.getLogger(__name__)

FORM_FIELD = "idempotency_key"


# Keys up to this long: a UUID is 36; the bound leaves room for other clients' schemes (Stripe's is the same)
# while keeping the record's key, which every write of a tap carries, small.
MAX_KEY_CHARS = 255
# A bare key is an HTTP token (RFC 9110 tchar), which every UUID is: the form TEMS's own pages and clients send.
_BARE_KEY = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
KEY_RULE = (f"The {HEADER} must be a Structured Field string (RFC 9651), e.g. "
            f'{HEADER}: "8e03978e-40d5-43e8-bc93-6894a57f9324", or the same key bare (letters, digits and '
            f"!#$%&'*+-.^_`|~ only), of 1 to {MAX_KEY_CHARS} characters; make a new UUID for each tap")


def _invalid_key(why: str) -> DomainError:
    return idempotency_error("invalid", f"{KEY_RULE}. {why}")


def _key_text(value: str) -> str:
    """The key a header value names: the content of an sf-string, or a bare token as it is."""
    text = value.strip(" \t")
    if text.startswith('"'):
        try:
            item, _parameters = http_sf.parse(text.encode("ascii"), tltype="item")
        except (UnicodeEncodeError, http_sf.StructuredFieldError) as error:
            raise _invalid_key(f"Got {text[:60]!r}, not a Structured Field string: {error}.") from None
        # Parameters are allowed and ignored (RFC 9651 has unknown parameters ignored); the draft defines none.
        return item
    if not _BARE_KEY.fullmatch(text):
        raise _invalid_key(f"Got {text[:60]!r}.")
    return text


def parse_key(value: str | None) -> str:
    """The canonical form of a client's idempotency key; DomainError('invalid') naming the rule otherwise.

    ``"k"`` (the draft's sf-string) and ``k`` (bare) are the same key; a UUID in any spelling is its lower-case
    hyphenated form, the one stored before quoted keys were accepted.
    """
    if not value:
        raise idempotency_error("invalid", f"The {HEADER} header is required: send a new UUID for each tap.")
    if len(value) > 2 * MAX_KEY_CHARS + 8:  # an sf-string escapes at most every character; spare the parser
        raise _invalid_key(f"Got {len(value)} characters.")
    key = _key_text(value)
    if not 1 <= len(key) <= MAX_KEY_CHARS:
        raise _invalid_key(f"Got {len(key)} characters.")
    try:
        return str(uuid.UUID(key))
    except ValueError:
        return key


def key_from_request(request: HttpRequest) -> str:
    """The key from the header (API, HTMX) or, for a plain form post without JavaScript, the form field."""
    key = parse_key(request.headers.get(HEADER) or request.POST.get(FORM_FIELD))
    telemetry.note(idempotency_key=key)
    return key


@dataclass(frozen=True)
class IdempotencyPolicy:
    """Timings of ``@idempotent``; tests pass a fake ``clock`` and ``sleep`` instead of waiting for real."""

    # Longer than any view should take: an attempt still INPROGRESS past its lease is presumed dead (a killed
    # worker) and the next request with the key takes over.
    lease: timedelta = timedelta(seconds=15)
    # How long an in-flight duplicate waits for the first attempt before it gives up with 409. A tap's retry
    # arrives while the first request is usually milliseconds from done, so waiting beats failing.
    max_wait: float = 3.0
    first_delay: float = 0.05
    max_delay: float = 0.5
    clock: Callable[[], datetime] = utcnow
    sleep: Callable[[float], None] = time.sleep


DEFAULT_POLICY = IdempotencyPolicy()
# A response with one of these statuses says "not now", not "this is the outcome": it is not stored.
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
RECORD = "record"


def request_payload(request: HttpRequest) -> Any:
    """What a request asks for, for its fingerprint: the JSON body, or the form fields without the tokens."""
    if request.content_type == JSON_CONTENT_TYPE and request.body:
        try:
            return loads_json(request.body)
        except DomainError:
            return request.body.decode(errors="replace")
    return {name: request.POST.getlist(name) for name in sorted(request.POST)
            if name not in {"csrfmiddlewaretoken", FORM_FIELD}}


def request_fingerprint(request: HttpRequest) -> str:
    return fingerprint(method=request.method or "", route=request.path, user_id=user_key(request.user),
                       payload=request_payload(request))


def _conditional_put(record: IdempotencyRecord, condition: Condition) -> IdempotencyRecord | None:
    """Put ``record`` if ``condition`` holds: None on success, else the record that stopped it (ALL_OLD).

    A one-item transaction rather than PutItem because PynamoDB's PutItem cannot ask for the old item on a
    failed condition; this way seeing "who holds the key" costs no extra read.
    """
    transaction = LabelledTransaction()
    transaction.save(RECORD, record, condition=condition, return_old_on_failure=True)
    try:
        transaction.commit()
    except TransactionCancelled as cancelled:
        reason = cancelled.reasons.get(RECORD)
        if reason is not None and reason.raw_item:
            return IdempotencyRecord.from_raw_data(reason.raw_item)
        if cancelled.is_conflict:
            return record  # someone is writing the record this very moment: treat as held, and wait
        raise
    return None


def _acquire(*, user_id: str, key: str, fp: str, attempt_id: str, policy: IdempotencyPolicy,
             rerun_after_crash: bool = True) -> StoredResponse | None:
    """Take the key for this attempt (None), or the first attempt's stored response to replay.

    Raises DomainError: 'unprocessable' (key used for another request), 'conflict' (still in flight after
    the bounded wait, carrying ``retry_after``; or, when ``rerun_after_crash`` is False, the first attempt
    stopped without recording its outcome, which is then unknown and must not be guessed by running again).
    """
    waited, delay = 0.0, policy.first_delay
    while True:
        now = policy.clock()
        mine = IdempotencyRecord(
            *IdempotencyRecord.key_for(user_id, key), user_id=user_id, key=key, fingerprint=fp,
            status=IN_PROGRESS, attempt_id=attempt_id, lease_expires_at=now + policy.lease,
            created_at=now, expires_at=now + RECORD_TTL,
        )
        # Free, expired, or held by an attempt of the same request whose lease ran out (taken over).
        stale = ((IdempotencyRecord.status == IN_PROGRESS) & (IdempotencyRecord.lease_expires_at < now)
                 & (IdempotencyRecord.fingerprint == fp))
        condition = record_is_absent_or_expired(now) | stale if rerun_after_crash else record_is_absent_or_expired(now)
        holder = _conditional_put(mine, condition)
        if holder is None:
            return None
        if holder is not mine:
            stored = replay_from_record(holder, fingerprint=fp)
            if stored is not None:
                return stored
            if holder.lease_expires_at is not None and holder.lease_expires_at < policy.clock():
                if not rerun_after_crash:
                    raise idempotency_error(
                        "conflict", "The first request with this Idempotency-Key stopped before recording its "
                        "outcome, so whether it applied is unknown. Check the current state; to act again, "
                        "send a new key.")
                continue  # the holder's lease ran out while we looked: take over now
        if waited >= policy.max_wait:
            retry_after = max(1, int(policy.lease.total_seconds()))
            raise idempotency_error("conflict", "The first request with this Idempotency-Key is still being processed; "
                              "retry with the same key shortly.", retry_after=retry_after)
        policy.sleep(delay)
        waited += delay
        delay = min(delay * 2, policy.max_delay)


def _finish(*, user_id: str, key: str, attempt_id: str, response: StoredResponse | None) -> None:
    """Store the outcome (or release the key when ``response`` is None), only while the attempt is still ours.

    A lost lease means another attempt took over: our write would overwrite its newer state, so it is skipped.
    """
    record = IdempotencyRecord(*IdempotencyRecord.key_for(user_id, key))
    still_mine = (IdempotencyRecord.attempt_id == attempt_id) & (IdempotencyRecord.status == IN_PROGRESS)
    # A one-item transaction: its ClientRequestToken makes the SDK's retry after a lost answer a success.
    transaction = LabelledTransaction()
    if response is None:
        transaction.delete(RECORD, record, condition=still_mine)
    else:
        transaction.update(RECORD, record, actions=[
            IdempotencyRecord.status.set(COMPLETED),
            IdempotencyRecord.response_status.set(response.status),
            IdempotencyRecord.response_body.set(response.body),
            IdempotencyRecord.response_content_type.set(response.content_type),
            (IdempotencyRecord.response_headers.set(json.dumps(response.headers)) if response.headers
             else IdempotencyRecord.response_headers.remove()),
            IdempotencyRecord.lease_expires_at.remove(),
        ], condition=still_mine)
    try:
        transaction.commit()
    except TransactionCancelled as cancelled:
        if not cancelled.failed(RECORD):
            raise


def _problem(request: HttpRequest, error: DomainError) -> HttpResponse:
    return problem_from_error(error)


def idempotent(view: Callable[..., HttpResponse] | None = None, *,
               render_error: Callable[[HttpRequest, DomainError], HttpResponse] | None = None,
               policy: IdempotencyPolicy | None = None, rerun_after_crash: bool = False) -> Callable:
    """Apply an unsafe view once per (user, Idempotency-Key); repeat its first response to every retry.

    1. The key (header, or the form field) must be well formed (``parse_key``): otherwise DomainError('invalid').
    2. An INPROGRESS record with a lease and this attempt's id is put under a condition (absent, expired, or a
       stale INPROGRESS of the same request whose lease ran out, which is taken over).
    3. If the key is held: a COMPLETED record is replayed (``Idempotent-Replayed: true``); another request's
       fingerprint is DomainError('unprocessable'); an attempt still in flight is waited for, bounded and with
       backoff, and its response replayed; only past the wait DomainError('conflict') with ``retry_after``.
    4. The view runs. A business outcome (including a DomainError it raises, rendered by ``render_error``,
       problem+json by default) is stored as COMPLETED; a transient answer (5xx, 429) releases the key so a
       retry can succeed (an exception does too, with ``rerun_after_crash``; see below).
       Either write applies only if the record still names this attempt.

    Errors of steps 1-3 propagate as DomainError for the caller's error mapping (``api_view`` for the API).

    Use it only where the change cannot be one transaction with its record (then fold the record into that
    transaction, as registrations and event creation do). A crash between the view's change and step 4 leaves
    the outcome unknown: by default a retry is then told so (409), never answered by running the view again,
    because a second run sees the first one's effect and would answer something else (a 404 for what it
    cancelled itself). ``rerun_after_crash=True`` is for views idempotent by design, whose second run gives
    the first run's answer: a stale attempt is then taken over and run again. Likewise an exception from the
    view releases the key only for those; otherwise the key stays with the attempt, whose outcome is unknown.
    If storing the outcome fails, the response is still answered (it is right); the key then stays unknown.
    """
    policy = policy or DEFAULT_POLICY
    render_error = render_error or _problem

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            key = key_from_request(request)
            user_id = user_key(request.user)
            attempt_id = uuid.uuid4().hex
            stored = _acquire(user_id=user_id, key=key, fp=request_fingerprint(request), attempt_id=attempt_id,
                              policy=policy, rerun_after_crash=rerun_after_crash)
            if stored is not None:
                return stored.to_http(replayed=True)
            try:
                try:
                    response = view(request, *args, **kwargs)
                except DomainError as error:
                    response = render_error(request, error)
            except BaseException:
                if rerun_after_crash:
                    _finish(user_id=user_id, key=key, attempt_id=attempt_id, response=None)
                raise
            # A transient answer says "nothing was done, try again": the key is released for the retry.
            outcome = None if response.status_code in TRANSIENT_STATUSES else StoredResponse.from_http(response)
            try:
                _finish(user_id=user_id, key=key, attempt_id=attempt_id, response=outcome)
            except Exception:  # noqa: BLE001 - the answer is right; only its record is missing (outcome unknown)
                logger.warning("could not record the outcome of idempotency key %s", key, exc_info=True)
            return response

        return wrapper

    return decorator(view) if view is not None else decorator
