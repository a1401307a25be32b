"""The registration race of the double-click lab: N taps of one student at once, through a chosen technique.

Each run gets a fresh event and a fresh synthetic student, fires the taps through ``lab.techniques``
(the same code the race tests and the real API use), counts what landed with strongly consistent reads, and
then deletes the run's items, so a naive run's duplicates teach without staying behind in the table.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from lab.machinery import fire_concurrently, scratch_delete
from lab.techniques.registration import RACE_TECHNIQUES, TECHNIQUES, Attempt, check_then_take
from registrations import selectors
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.events.models import Event
from registrations.models import CONFIRMED, REGISTRATION_BUCKETS, WAITLISTED, Registration, RegistrationClaim
from registrations.reports.models import REPORT_SLOTS, EventReportDay
from registrations.seating.gate import gate_get
from registrations.seating.models import SeatGate, SeatShard, WaitlistQueue
from registrations.seating.shards import event_seat_counts, max_shards, shard_count
from tems.clock import utcnow
from tems.idempotency import IdempotencyRecord
from tems.metering import metered
from tems.outbox import OutboxMessage

MAX_TAPS = 100
LAB_EVENT_COLLECTION = "LAB_EVENTS"
# A race deletes its scratch event when it ends; the TTL only catches a run whose process died first.
SCRATCH_TTL = timedelta(hours=1)
# The try-it event is replaced on "start over"; a day covers a lab session, and the owner's next visit after
# the TTL removed it clears what was left of it (scratch_event_delete) and makes a new one.
TRYIT_TTL = timedelta(days=1)
TRYIT_CAPACITY = 20


def _scratch_event(run_id: str, *, title: str, capacity: int) -> Event:
    """A fresh event for one run, starting tomorrow, kept out of the real listings (its own collection) and
    removed by its TTL should the run die before it deletes it."""
    return event_services.event_create(
        event_id=f"{Event.SCRATCH_PREFIX}{run_id}", title=title, starts_at=utcnow() + timedelta(days=1),
        capacity=capacity, created_by="lab", collection=LAB_EVENT_COLLECTION, expires_at=utcnow() + SCRATCH_TTL)


def _outcome_label(outcome) -> str:
    if outcome.error is not None:
        error = outcome.error
        return f"error: {error.code}" if isinstance(error, RegistrationError) else f"error: {type(error).__name__}"
    attempt: Attempt = outcome.value
    return attempt.outcome


def registration_race(*, technique: str, taps: int, same_key: bool, latency_ms: int) -> dict[str, Any]:
    """Fire ``taps`` registrations of one student for one fresh event at once and report what landed.

    ``same_key`` models network retries of one tap (one idempotency key); otherwise each tap is a double click
    with its own key. ``latency_ms`` is simulated network delay inside the technique's read-to-write window.
    """
    if technique not in RACE_TECHNIQUES:
        raise RegistrationError("invalid", f"Unknown technique {technique!r}.", errors={"technique": ["Unknown."]})
    function = TECHNIQUES[technique].run
    run_id = uuid.uuid4().hex[:10]
    event = _scratch_event(run_id, title=f"Lab race ({TECHNIQUES[technique].label})", capacity=MAX_TAPS)
    user_id = f"lab-student-{run_id}"
    shared_key = str(uuid.uuid4())
    keys = [shared_key if same_key else str(uuid.uuid4()) for _ in range(taps)]

    def pause() -> None:
        time.sleep(latency_ms / 1000)

    started = utcnow()
    fired = fire_concurrently([
        (lambda key=key: function(event_id=event.event_id, user_id=user_id, idempotency_key=key, pause=pause))
        for key in keys
    ])
    ids = {o.value.registration_id for o in fired.outcomes if o.error is None and o.value.registration_id}
    landed = _landed(event_id=event.event_id, user_id=user_id)
    _delete_run(event_id=event.event_id, keys={user_id: set(keys)}, since=started)
    return {
        "technique": technique,
        "taps": taps,
        "same_key": same_key,
        "latency_ms": latency_ms,
        "records_created": landed["records"],
        "distinct_registration_ids": len(ids),
        "claims": landed["claims"],
        "counter": landed["counter"],
        "responses": dict(Counter(_outcome_label(o) for o in fired.outcomes)),
        "dynamodb_requests": fired.dynamodb_requests,
        "requests_by_operation": fired.requests_by_operation,
        "consumed_wcu": fired.consumed_wcu,
        "elapsed_ms": fired.elapsed_ms,
    }


def _landed(*, event_id: str, user_id: str) -> dict[str, int]:
    event_side = list(selectors.event_registrations(event_id=event_id))
    claim = selectors.claim_get(event_id=event_id, user_id=user_id)
    seats = event_seat_counts(event_id)
    return {"records": len(event_side), "claims": int(claim is not None), "counter": seats.registered}


def _delete_run(*, event_id: str, keys: dict[str, set[str]], since) -> None:
    """Remove the run's scratch data: its event's and its students' partitions, each student's idempotency
    records (``keys``: student -> keys) and the run's outbox messages.

    The outbox messages announce registrations of synthetic students; no relay should ever deliver them.
    """
    extra = [{"PK": {"S": IdempotencyRecord.pk_for(user_id, key)}, "SK": {"S": IdempotencyRecord.SK}}
             for user_id, taps in keys.items() for key in taps]
    for collection in OutboxMessage.collections():
        for message in OutboxMessage.pending.query(
            collection, OutboxMessage.gsi1sk >= OutboxMessage.listing_key(since, ""),
            filter_condition=OutboxMessage.payload.contains(event_id),
        ):
            extra.append({"PK": {"S": message.pk}, "SK": {"S": message.sk}})
    shards = _shard_count(event_id)
    scratch_delete(partitions=[*_event_partitions(event_id, shards=shards),
                               *(Registration.user_pk_for(user) for user in keys),
                               *(SeatShard.pk_for(event_id, shard) for shard in range(shards))], keys=extra)


# --- the scoreboard's last-seat row, live ---------------------------------------------------------------------

# As many students as the scoreboard's scenario; the window is the time a handler of that kind spends between
# its read and its write (a round trip to the database and back), long enough that the taps' reads all land
# before the first write.
LAST_SEAT_TAPS = 6
LAST_SEAT_WINDOW_MS = 50
LAST_SEAT_TECHNIQUES = {"production": TECHNIQUES["production"].run, "check_then_take": check_then_take}


def last_seat_race(*, taps: int = LAST_SEAT_TAPS) -> dict[str, dict[str, int]]:
    """``taps`` students tap Register at once on a fresh event with one seat, through TEMS and through the
    check-then-take: per technique, how many were confirmed, how many wait and how many seats the event shows."""
    return {name: _last_seat_run(technique, taps=taps) for name, technique in LAST_SEAT_TECHNIQUES.items()}


def _last_seat_run(technique, *, taps: int) -> dict[str, int]:
    run_id = uuid.uuid4().hex[:10]
    event = _scratch_event(run_id, title="Lab: the last seat", capacity=1)
    keys = {f"lab-student-{run_id}-{n}": str(uuid.uuid4()) for n in range(taps)}

    def pause() -> None:
        time.sleep(LAST_SEAT_WINDOW_MS / 1000)

    started = utcnow()
    fired = fire_concurrently([
        (lambda user=user, key=key: technique(event_id=event.event_id, user_id=user, idempotency_key=key,
                                              pause=pause))
        for user, key in keys.items()])
    statuses = Counter(registration.status for registration in selectors.event_registrations(event_id=event.event_id))
    result = {"taps": taps, "confirmed": statuses[CONFIRMED], "waiting": statuses[WAITLISTED],
              "seats_shown": event_seat_counts(event.event_id).registered,
              "errors": sum(outcome.error is not None for outcome in fired.outcomes)}
    _delete_run(event_id=event.event_id, keys={user: {key} for user, key in keys.items()}, since=started)
    return result


def _shard_count(event_id: str, *, capacity: int | None = None) -> int:
    """How many seat shards a scratch event has: as many as its gate names (an event's shard count never shrinks;
    the TTL removes the event item, never its gate). Without a gate the event was never made, or its making died
    before the transaction that writes the gate: then only the shards an event of ``capacity`` seats is born with
    can exist, or, when that is not known, every shard an event can have."""
    gate = gate_get(event_id=event_id)
    if gate is not None:
        return int(gate.shards)
    return shard_count(capacity) if capacity is not None else max_shards()


def _event_partitions(event_id: str, *, shards: int) -> list[str]:
    """The partitions that hold only this event's items: its own, its waiting list's queue item's and gate's,
    its registrations' buckets and its report's slots (one a shard, for its ``shards``)."""
    return [Event.pk_for(event_id), WaitlistQueue.pk_for(event_id), SeatGate.pk_for(event_id),
            *(Registration.event_pk_for(event_id, bucket) for bucket in range(REGISTRATION_BUCKETS)),
            *(EventReportDay.pk_for(event_id, slot) for slot in range(min(shards, REPORT_SLOTS)))]


# --- the try-it panel: one scratch event per person ----------------------------------------------------------

def tryit_event_id(*, user_id: str) -> str:
    # Derived from the person, so a reset or a new session replaces their event instead of adding one more.
    return f"{Event.SCRATCH_PREFIX}tryit-{hashlib.sha256(user_id.encode()).hexdigest()[:10]}"


def tryit_event(*, user_id: str, fresh: bool = False) -> Event:
    """The person's scratch event for the real Register button; ``fresh`` deletes it and its registrations first."""
    event_id = tryit_event_id(user_id=user_id)
    if not fresh:
        try:
            return selectors.event_get(event_id=event_id)
        except RegistrationError:
            pass  # never made, or removed by its TTL: clear whatever registrations it left behind
    scratch_event_delete(event_id=event_id, capacity=TRYIT_CAPACITY)
    try:
        return event_services.event_create(
            event_id=event_id, title="Lab: try the real Register button", location="The double-click lab",
            starts_at=utcnow() + timedelta(days=7), capacity=TRYIT_CAPACITY, created_by="lab",
            collection=LAB_EVENT_COLLECTION, expires_at=utcnow() + TRYIT_TTL,
        )
    except RegistrationError as error:
        if error.code != "conflict":
            raise
        return selectors.event_get(event_id=event_id)  # a reset in another tab made it a moment ago


def scratch_event_delete(*, event_id: str, capacity: int) -> int:
    """Delete a lab event's partitions (event, waiting list, event-side registrations) and, in each student's
    partition, the claim and the student-side copy of each registration, so nobody's list keeps a registration
    for an event that is gone. ``capacity``: the seats the event is made with."""
    if not event_id.startswith(Event.SCRATCH_PREFIX):
        raise ValueError(f"{event_id!r} is not a lab scratch event")
    registrations = selectors.event_registrations(event_id=event_id)
    student_side = [dict(zip(("PK", "SK"), ({"S": part} for part in key), strict=True))
                    for registration in registrations
                    for key in (Registration.user_key_for(registration.user_id, registration.registration_id),
                                RegistrationClaim.key_for(event_id, registration.user_id))]
    # Its seat shards' partitions too (each shard and its lane of the waiting list), a Query each.
    count = _shard_count(event_id, capacity=capacity)
    shards = [SeatShard.pk_for(event_id, shard) for shard in range(count)]
    return scratch_delete(partitions=[*_event_partitions(event_id, shards=count), *shards], keys=student_side)


def technique_costs() -> dict[str, dict[str, float]]:
    """What each technique sends for a first tap and for a retry of it (same key), measured one at a time."""
    costs = {}
    for name, technique in TECHNIQUES.items():
        function = technique.run
        run_id = uuid.uuid4().hex[:10]
        event = _scratch_event(run_id, title="Lab cost probe", capacity=10)
        user_id, key = f"lab-student-{run_id}", str(uuid.uuid4())
        started = utcnow()
        with metered() as first:
            function(event_id=event.event_id, user_id=user_id, idempotency_key=key)
        with metered() as retry:
            function(event_id=event.event_id, user_id=user_id, idempotency_key=key)
        _delete_run(event_id=event.event_id, keys={user_id: {key}}, since=started)
        costs[name] = {"first_requests": first.total_requests, "first_wcu": round(first.write_capacity, 1),
                       "retry_requests": retry.total_requests, "retry_wcu": round(retry.write_capacity, 1)}
    return costs


@dataclass(frozen=True)
class Guarantees:
    """What a technique guarantees, from the article's criteria; the lab fills in the measured costs next to it."""

    no_duplicates: bool
    all_or_nothing: bool
    replay: bool
    in_flight: str  # what a duplicate meets while the first tap is still running
    pick: str  # when to choose it


GUARANTEES = {
    "naive": Guarantees(False, False, False, "Both taps run the whole handler.",
                        "Never: it is kept here to show the bug."),
    "claim": Guarantees(True, False, False, "The loser reads the winner's claim, maybe before its other writes land.",
                        "When the claim item is the whole change."),
    "transaction": Guarantees(
        True, True, False, "The loser's transaction is cancelled; it reads the claim and rebuilds an answer.",
        "Several items must change together and clients need no stored response."),
    "powertools": Guarantees(
        False, False, True,
        "A same-key duplicate fails at once (in progress); a double click has two keys and runs twice.",
        "Caching whole responses around a handler that is already safe on its own."),
    "all_three": Guarantees(True, True, True,
                            "A same-key duplicate fails at once (in progress) and must be retried by the client.",
                            "The article's fix: correct, at three requests per first tap."),
    "production": Guarantees(
        True, True, True,
        "The record is born COMPLETED in the winner's transaction: a duplicate gets its committed answer, never "
        "\"in progress\".",
        "Default for every tap in TEMS: all guarantees in one request."),
}


def decision_rows(costs: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    return [{"name": name, "label": technique.label, **asdict(GUARANTEES[name]), "costs": costs.get(name)}
            for name, technique in TECHNIQUES.items()]
