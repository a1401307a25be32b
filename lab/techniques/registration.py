"""Ways to register a student, side by side: the race tests, ``make bench`` and the lab run them all.

``naive`` and ``powertools`` are DELIBERATELY BROKEN: the read-then-write handler of the article TEMS was built
to fix, kept to prove that the race tests catch the bug. So is ``check_then_take`` (a seat, not a student's taps:
the scoreboard's last-seat row, which the lab also runs live). They live in the lab, which no production module
imports, so no view can reach them.

Every technique is a plain function with one signature, so a caller can swap them freely::

    technique(*, event_id: str, user_id: str, idempotency_key: str, pause: Callable[[], None] = no_pause)
        -> Attempt

Each has ONE name, used by the lab's form and API, its run history, the decision table, the tests and the bench.

``pause`` runs inside the technique's race window (between the read that decides and the write that acts);
a test widens it to make a broken technique fail reliably, and the lab can show the window on screen. The
techniques, from worst to best:

- ``naive``: idempotency GetItem, "already registered?" Query, then three unconditional puts (5 requests).
  Two taps that read before either writes both register.
- ``claim`` (the article's technique 1): a conditional put of the claim, then the rest as separate
  writes (the items, the seat counter and the report's count: 5 requests). No duplicates, but a crash after
  the claim leaves a claim without a registration, and no replay.
- ``transaction`` (technique 2): claim, items, counter and idempotency record in one transaction; a loser
  reads the claim. No stored response, so a retry gets a rebuilt answer, not the first one's bytes.
- ``powertools`` (technique 3 alone): Powertools' INPROGRESS -> COMPLETED record around the naive body.
  Network retries of one tap are deduplicated; double clicks (two keys) still register twice.
- ``all_three`` (technique 3 around 2, the article's combined fix): an INPROGRESS record put first, the
  transaction, then the record completed: 3 requests, and an in-flight duplicate fails at once.
- ``production``: TEMS's own ``services.registration_create``, everything in one transaction (1 request).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from pynamodb.exceptions import PutError

from registrations import services
from registrations.models import CONFIRMED, WAITLISTED, Registration, RegistrationClaim
from registrations.reports.counting import count_registered
from registrations.reports.models import EventReportDay
from registrations.seating.models import SeatShard
from tems.clock import utcnow
from tems.idempotency import (
    COMPLETED,
    IN_PROGRESS,
    RECORD_TTL,
    IdempotencyRecord,
    StoredResponse,
    completed_record,
    fingerprint,
    record_is_absent_or_expired,
)
from tems.transactions import LabelledTransaction, TransactionCancelled

CONDITION_FAILED = "ConditionalCheckFailedException"


@dataclass(frozen=True)
class Attempt:
    """What one call of a technique answered."""

    registration_id: str | None
    outcome: str  # "created" | "replayed" | "already_registered" | "in_progress"
    body: str | None = None  # the response body, where the technique has one


def no_pause() -> None:
    return None


def registration_fingerprint(*, event_id: str, user_id: str) -> str:
    """The fingerprint the API computes for a registration POST (empty body)."""
    return fingerprint(method="POST", route=f"/api/events/{event_id}/registrations", user_id=user_id, payload={})


def _items(registration_id: str, event_id: str, user_id: str,
           shard: int | None = None) -> tuple[Registration, Registration]:
    # ``shard``: the seat shard a technique that takes a seat counts it on (the naive handler takes none).
    fields = {"registration_id": registration_id, "event_id": event_id, "user_id": user_id, "status": CONFIRMED,
              "created_at": utcnow(), "shard": shard}
    return (Registration(*Registration.user_key_for(user_id, registration_id), **fields),
            Registration(*Registration.event_key_for(event_id, registration_id), **fields))


def naive(*, event_id: str, user_id: str, idempotency_key: str | None,
          pause: Callable[[], None] = no_pause) -> Attempt:
    """DELIBERATELY BROKEN: read, decide, then write. See the module docstring.

    ``idempotency_key=None`` leaves out its own idempotency record (when a wrapper keeps one instead).
    """
    if idempotency_key is not None:
        try:
            record = IdempotencyRecord.get(*IdempotencyRecord.key_for(user_id, idempotency_key))
            return Attempt(json.loads(record.response_body)["registration_id"], "replayed", record.response_body)
        except IdempotencyRecord.DoesNotExist:
            pass
    existing = list(Registration.query(Registration.user_pk_for(user_id),
                                       Registration.sk.startswith(Registration.SK_PREFIX),
                                       filter_condition=Registration.event_id == event_id))
    if existing:
        return Attempt(existing[0].registration_id, "already_registered")
    pause()  # the race window: every tap that got here before the first write lands will register again
    registration_id = services.new_registration_id()
    user_item, event_item = _items(registration_id, event_id, user_id)
    user_item.save()
    event_item.save()
    body = json.dumps({"registration_id": registration_id, "status": CONFIRMED})
    if idempotency_key is not None:
        completed_record(user_id=user_id, key=idempotency_key, fingerprint="naive",
                         response=StoredResponse(201, body)).save()
    return Attempt(registration_id, "created", body)


def check_then_take(*, event_id: str, user_id: str, idempotency_key: str,
                    pause: Callable[[], None] = no_pause) -> Attempt:
    """DELIBERATELY BROKEN: "is a seat left?" read first, then the registration and the seat count written
    without a condition, as the order handler of the scoreboard's last-seat row did (docs/SCOREBOARD.md). Taps
    that read before either writes all get the last seat. Not a race technique: it is about the seat, not about
    one student's taps, so the lab runs it in its own section."""
    seats = SeatShard.get(*SeatShard.key_for(event_id, 0), consistent_read=True)
    if seats.taken >= seats.capacity:
        return Attempt(None, WAITLISTED)
    pause()  # the race window: every tap that read a free seat before the first write lands takes it too
    registration_id = services.new_registration_id()
    RegistrationClaim(*RegistrationClaim.key_for(event_id, user_id), registration_id=registration_id,
                      event_id=event_id, user_id=user_id, status=CONFIRMED, created_at=utcnow(), shard=0).save(
        condition=RegistrationClaim.pk.does_not_exist())
    for item in _items(registration_id, event_id, user_id, shard=0):
        item.save()
    SeatShard(*SeatShard.key_for(event_id, 0)).update(actions=[SeatShard.taken.add(1)])
    return Attempt(registration_id, "created")


def claim(*, event_id: str, user_id: str, idempotency_key: str,
               pause: Callable[[], None] = no_pause) -> Attempt:
    """Technique 1: the claim's condition makes duplicates impossible; the other writes are not atomic with it."""
    registration_id = services.new_registration_id()
    claim = RegistrationClaim(*RegistrationClaim.key_for(event_id, user_id), registration_id=registration_id,
                              event_id=event_id, user_id=user_id, status=CONFIRMED, created_at=utcnow(), shard=0)
    try:
        claim.save(condition=RegistrationClaim.pk.does_not_exist())
    except PutError as error:
        if error.cause_response_code != CONDITION_FAILED:
            raise
        winner = RegistrationClaim.get(*RegistrationClaim.key_for(event_id, user_id), consistent_read=True)
        return Attempt(winner.registration_id, "already_registered")
    pause()  # a crash here leaves a claim with no registration: the gap technique 2 closes
    items = _items(registration_id, event_id, user_id, shard=0)
    for item in items:
        item.save()
    # The article's single seat counter: the event's first seat shard (every event has shard 0).
    SeatShard(*SeatShard.key_for(event_id, 0)).update(actions=[SeatShard.taken.add(1)])
    # And the report's count (docs/reports.md), a write of its own like every write of this technique.
    created_at = items[0].created_at
    EventReportDay(*EventReportDay.key_for(event_id, shard=0, when=created_at)).update(actions=[
        EventReportDay.registrations.add(1), EventReportDay.event_id.set(event_id),
        EventReportDay.day.set(EventReportDay.day_of(created_at)), EventReportDay.entity.set("EventReportDay")])
    return Attempt(registration_id, "created")


def _claim_transaction(event_id: str, user_id: str, idempotency_key: str | None) -> Attempt:
    registration_id = services.new_registration_id()
    transaction = LabelledTransaction()
    claim = RegistrationClaim(*RegistrationClaim.key_for(event_id, user_id), registration_id=registration_id,
                              event_id=event_id, user_id=user_id, status=CONFIRMED, created_at=utcnow(), shard=0)
    transaction.save("claim", claim, condition=RegistrationClaim.pk.does_not_exist())
    user_item, event_item = _items(registration_id, event_id, user_id, shard=0)
    transaction.save("user_registration", user_item)
    transaction.save("event_registration", event_item)
    transaction.update("event", SeatShard(*SeatShard.key_for(event_id, 0)),
                       actions=[SeatShard.taken.add(1)], condition=SeatShard.taken < SeatShard.capacity)
    count_registered(transaction, event_id=event_id, shard=0, created_at=user_item.created_at, waiting=False)
    body = json.dumps({"registration_id": registration_id, "status": CONFIRMED})
    if idempotency_key is not None:
        # As in the article: the record is written with the registration, unconditionally.
        transaction.save("idempotency", completed_record(user_id=user_id, key=idempotency_key, fingerprint="t2",
                                                          response=StoredResponse(201, body)))
    try:
        transaction.commit()
    except TransactionCancelled as cancelled:
        if not cancelled.failed("claim"):
            raise
        winner = RegistrationClaim.get(*RegistrationClaim.key_for(event_id, user_id), consistent_read=True)
        return Attempt(winner.registration_id, "already_registered")
    return Attempt(registration_id, "created", body)


def transaction(*, event_id: str, user_id: str, idempotency_key: str,
                      pause: Callable[[], None] = no_pause) -> Attempt:
    """Technique 2: one transaction; a loser reads the claim to answer."""
    pause()
    return _claim_transaction(event_id, user_id, idempotency_key)


def _powertools(body: Callable[..., Attempt], *, event_id: str, user_id: str, idempotency_key: str,
                pause: Callable[[], None]) -> Attempt:
    """Powertools' idempotency utility around ``body``: INPROGRESS put, the body, then COMPLETED (3+ requests).

    An in-flight duplicate fails at once (Powertools' IdempotencyAlreadyInProgressError), and a replay costs a
    failed put plus a GetItem. It only dedupes taps that share a key: a double click makes two keys.
    """
    now = utcnow()
    record = IdempotencyRecord(*IdempotencyRecord.key_for(user_id, idempotency_key), user_id=user_id,
                               key=idempotency_key, fingerprint="t3", status=IN_PROGRESS,
                               created_at=now, expires_at=now + RECORD_TTL)
    try:
        record.save(condition=record_is_absent_or_expired(now))
    except PutError as error:
        if error.cause_response_code != CONDITION_FAILED:
            raise
        stored = IdempotencyRecord.get(*IdempotencyRecord.key_for(user_id, idempotency_key), consistent_read=True)
        if stored.status != COMPLETED:
            return Attempt(None, "in_progress")
        return Attempt(json.loads(stored.response_body)["registration_id"], "replayed", stored.response_body)
    attempt = body(event_id=event_id, user_id=user_id, pause=pause)
    response = json.dumps({"registration_id": attempt.registration_id, "status": CONFIRMED})
    record.update(actions=[IdempotencyRecord.status.set(COMPLETED), IdempotencyRecord.response_status.set(201),
                           IdempotencyRecord.response_body.set(response)])
    return Attempt(attempt.registration_id, attempt.outcome, response)


def _naive_body(*, event_id: str, user_id: str, pause: Callable[[], None]) -> Attempt:
    # The naive handler without its own idempotency read: the wrapper does that job.
    return naive(event_id=event_id, user_id=user_id, idempotency_key=None, pause=pause)


def _claim_transaction_body(*, event_id: str, user_id: str, pause: Callable[[], None]) -> Attempt:
    pause()
    return _claim_transaction(event_id, user_id, None)


def powertools(*, event_id: str, user_id: str, idempotency_key: str,
                     pause: Callable[[], None] = no_pause) -> Attempt:
    """Technique 3 alone: the Powertools-style wrapper around the naive body. Retries of one tap are safe;
    BROKEN for double clicks, which carry two keys and both reach the naive body."""
    return _powertools(_naive_body, event_id=event_id, user_id=user_id, idempotency_key=idempotency_key,
                       pause=pause)


def all_three(*, event_id: str, user_id: str, idempotency_key: str,
                     pause: Callable[[], None] = no_pause) -> Attempt:
    """Techniques 1 + 2 + 3, as the article's fix: the Powertools-style wrapper around claim + transaction."""
    return _powertools(_claim_transaction_body, event_id=event_id, user_id=user_id,
                       idempotency_key=idempotency_key, pause=pause)


def production(*, event_id: str, user_id: str, idempotency_key: str, pause: Callable[[], None] = no_pause) -> Attempt:
    """The real path (``services.registration_create``): there is no read before the write, so no window."""
    pause()
    outcome = services.registration_create(
        event_id=event_id, user_id=user_id, idempotency_key=idempotency_key,
        fingerprint=registration_fingerprint(event_id=event_id, user_id=user_id),
    )
    return Attempt(outcome.data["registration_id"], outcome.kind, outcome.response.body)


@dataclass(frozen=True)
class Technique:
    name: str
    label: str
    run: Callable[..., Attempt]


# In the order the lab lists them, worst to best. ``all_three`` is in the decision table and the bench but not in
# the race form: it is ``transaction`` behind the wrapper, and the race would show nothing new.
TECHNIQUES: dict[str, Technique] = {t.name: t for t in (
    Technique("naive", "Naive read-then-write (broken)", naive),
    Technique("claim", "Claim key + conditional put", claim),
    Technique("transaction", "Claim + TransactWriteItems", transaction),
    Technique("powertools", "Powertools-style wrapper", powertools),
    Technique("all_three", "Claim + transaction + wrapper", all_three),
    Technique("production", "TEMS: one transaction", production),
)}
RACE_TECHNIQUES = tuple(name for name in TECHNIQUES if name != "all_three")
