"""What every registrations write shares: the labels of transaction items, the bounds of retrying, the
stored answer of a tap and the app's "busy" error."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from registrations.errors import RegistrationError
from tems.errors import DomainError
from tems.idempotency import RECORD_LABEL, StoredResponse, add_completed_record, replay_from_raw
from tems.ratelimit import add_write_count, raise_if_write_rate_refused
from tems.transactions import Backoff, LabelledTransaction, RetryPolicy, TransactionCancelled, commit_round

# Labels of the items in a registration's transaction; the loser paths are decided by these, never by position.
IDEMPOTENCY = RECORD_LABEL  # the tap's record (tems.idempotency.add_completed_record)
CLAIM = "claim"
USER_REGISTRATION = "user_registration"
EVENT_REGISTRATION = "event_registration"
WAITLIST_ENTRY = "waitlist_entry"
EVENT_SEATS = "event"
SEAT = "seat"  # one seat shard (registrations.seating.shards); the waitlist join checks each as "seat_<k>"
LANE = "lane"  # the seat shard a waitlist join takes its ticket from (registrations.seating.lanes, "Lanes")
EVENT = EVENT_SEATS  # the event item, in an edit's or a creation's transaction
OUTBOX = "outbox"
QUEUE = "queue"  # the event's waitlist queue item (registrations.seating.lanes, "Claims")
# The waitlist head's items in a promotion or an offer (registrations.services.promotion, offers.offer_writes).
HEAD_CLAIM = "head_claim"
HEAD_USER_REGISTRATION = "head_user_registration"
HEAD_EVENT_REGISTRATION = "head_event_registration"
HEAD_WAITLIST_ENTRY = "head_waitlist_entry"
OUTBOX_PROMOTED = "outbox_promoted"

# Each round is one request. Losing the waitlist ticket to another joiner costs a round, so a burst of N
# waitlisters needs up to N rounds for the last of them; 64 covers a burst far above a real event's and still
# answers within about a second.
MAX_ROUNDS = 64
# TransactionConflict means another transaction was touching the same item just then: retrying is right, but
# past this many in one request the table is too hot and the student should be told to try again.
MAX_CONFLICTS = 12
CONFLICT_BASE_DELAY = 0.01
CONFLICT_MAX_DELAY = 0.25
# Losing the waitlist ticket is not a conflict but many joiners retry at once; a little spread avoids a herd.
TICKET_MAX_DELAY = 0.02
BUSY_RETRY_AFTER_SECONDS = 1


@dataclass(frozen=True)
class StoredOutcome:
    """A write's answer as it will be sent (and replayed): the response and whether this is a replay."""

    response: StoredResponse
    replayed: bool = False

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.response.body)


def stored_answer(raw_item: dict[str, Any], fingerprint: str, *,
                busy_detail: str = "This request is still being processed; try again in a moment.") -> StoredResponse:
    """The first answer stored under the key (its record's raw image), to send again byte for byte."""
    try:
        stored = replay_from_raw(raw_item, fingerprint=fingerprint)
    except DomainError as error:
        # The key was used for another request; the extras keep the link to the published key policy.
        raise RegistrationError(error.code, error.detail, **error.extra) from None
    if stored is None:
        # The key's first request is still running (only the generic @idempotent writes INPROGRESS records).
        raise busy_error(busy_detail)
    return stored


# The 503's detail when an event's burst left no room to retry in time (conflicts, or reads throttled).
CROWDED = "Many people are registering for this event right now; please try again in a moment."


def busy_error(detail: str) -> RegistrationError:
    return RegistrationError("busy", detail, retry_after=BUSY_RETRY_AFTER_SECONDS)


def conflict_backoff(sleep: Callable[[float], None], *, detail: str = CROWDED) -> Backoff:
    """The pauses of a round-based loop between TransactionConflicts: at most MAX_CONFLICTS, then 'busy'."""
    # Built per call from the module's numbers, so a test may shorten them. The first pause is capped at
    # twice the base delay: a round already cost one request before it conflicted.
    policy = RetryPolicy(attempts=MAX_CONFLICTS, base_delay=2 * CONFLICT_BASE_DELAY, max_delay=CONFLICT_MAX_DELAY,
                         sleep=sleep)
    return policy.pauses(lambda: busy_error(detail))


def ticket_pause(sleep: Callable[[float], None]) -> None:
    """A short full-jitter pause after losing the waitlist ticket, so joiners do not retry in lockstep."""
    RetryPolicy(base_delay=TICKET_MAX_DELAY, max_delay=TICKET_MAX_DELAY, sleep=sleep).backoff(0)


def commit_tap(transaction: LabelledTransaction, *, user_id: str, key: str, fingerprint: str,
               response: StoredResponse, now: datetime
               ) -> StoredOutcome | TransactionCancelled | Literal["unknown outcome"] | None:
    """One round of a tap's write loop: ``transaction`` with the tap's record (COMPLETED with ``response``) added,
    committed by ``commit_round``. A refusal by the record is the key's first answer, returned as a replayed
    ``StoredOutcome``; anything else as ``commit_round`` returns it (None: applied)."""
    add_completed_record(transaction, user_id=user_id, key=key, fingerprint=fingerprint, response=response, now=now)
    cancelled = commit_round(transaction)
    if isinstance(cancelled, TransactionCancelled) and cancelled.failed(IDEMPOTENCY):
        return StoredOutcome(stored_answer(cancelled.reasons[IDEMPOTENCY].raw_item, fingerprint), replayed=True)
    return cancelled


# A one- or two-item write (an event, an answer stored under a key) that met a TransactionConflict: six tries.
WRITE_POLICY = RetryPolicy()


def remember_answer(*, user_id: str, key: str, fingerprint: str, response: StoredResponse, now: datetime,
                    sleep: Callable[[float], None], busy_detail: str = (
                        "This request is being answered by another attempt right now; try again in a moment."),
                    write_limit: int = 0) -> dict[str, Any] | None:
    """Store ``response`` under the tap's key in a transaction of its own (nothing else changes with it but the
    user's write count, when ``write_limit`` is set: tems.ratelimit.add_write_count).

    Returns None once stored, or the raw record (ALL_OLD) when a duplicate of this very tap stored its answer
    first: the caller replays those bytes. Raises RegistrationError('busy') when conflicts do not clear, and
    WriteRateExceeded when the user's writes this minute are used up (nothing stored).
    """
    def store() -> None:
        transaction = LabelledTransaction()
        add_completed_record(transaction, user_id=user_id, key=key, fingerprint=fingerprint, response=response,
                             now=now)
        add_write_count(transaction, user_id=user_id, limit=write_limit, now=now)
        transaction.commit()

    try:
        WRITE_POLICY.sleeping(sleep).run(store, busy=lambda _: busy_error(busy_detail))
    except TransactionCancelled as cancelled:
        if not cancelled.failed(IDEMPOTENCY):
            raise_if_write_rate_refused(cancelled, now=now)
            raise
        return cancelled.reasons[IDEMPOTENCY].raw_item
    return None


def remember_outcome(*, user_id: str, key: str, fingerprint: str, response: StoredResponse, now: datetime,
                     sleep: Callable[[float], None]) -> StoredOutcome:
    """``response`` stored under the tap's key by ``remember_answer`` and sent; or, when a duplicate of this very
    tap stored its answer first, that first answer, replayed byte for byte."""
    first = remember_answer(user_id=user_id, key=key, fingerprint=fingerprint, response=response, now=now,
                            sleep=sleep)
    if first is not None:
        return StoredOutcome(stored_answer(first, fingerprint), replayed=True)
    return StoredOutcome(response)
