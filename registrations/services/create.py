"""A student's registration: the claim, the seat or the waiting-list ticket, and the record, as one transaction.

Claim + both registration items + a seat of one shard (or a ticket of one lane of the waiting list) + the
idempotency record, born COMPLETED with its response + an outbox message. Which shard or lane each round tries is
the router's (``registrations.seating.router``); this module builds the rounds and reads refusals by label:

    idempotency  the same key was used before: replay its stored response (ALL_OLD, no extra read)
    claim        the student is already registered (another tap, another key): answer with that registration
    seat / lane  no free seat, or the lane moved: the router learns from the image and plans the next round
    conflict     another transaction held an item: try again after a jittered pause, bounded, then "busy"
    write_rate   the student's write limit for the minute is used up: WriteRateExceeded (tems.ratelimit)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pynamodb.exceptions import PynamoDBException

from registrations import attendees, selectors
from registrations.models import CONFIRMED, WAITLISTED, Registration, RegistrationClaim, WaitlistEntry
from registrations.questions import question_sets
from registrations.reports.counting import count_registered
from registrations.seating import lanes, positions, shards
from registrations.seating.gate import CLOSED, GateBusy
from registrations.seating.models import SeatShard, WaitlistQueue
from registrations.seating.router import Join, Router
from registrations.serializers import registration_to_dict
from registrations.services.outcome import RegistrationOutcome, new_registration_id
from registrations.services.promotion import waitlist_promote_best_effort
from registrations.write_rules import (
    CLAIM,
    CROWDED,
    EVENT_REGISTRATION,
    IDEMPOTENCY,
    LANE,
    MAX_ROUNDS,
    OUTBOX,
    QUEUE,
    SEAT,
    USER_REGISTRATION,
    WAITLIST_ENTRY,
    busy_error,
    conflict_backoff,
    remember_answer,
    stored_answer,
    ticket_pause,
)
from tems.clock import utcnow
from tems.dynamo import batch_get_models
from tems.idempotency import IdempotencyRecord, StoredResponse, add_completed_record, record_expired
from tems.outbox import outbox_message
from tems.ratelimit import add_write_count, raise_if_write_rate_refused
from tems.transactions import (
    CONDITIONAL_CHECK_FAILED,
    TRANSIENT,
    UNKNOWN_OUTCOME,
    LabelledTransaction,
    commit_round,
    response_code,
)


@dataclass(frozen=True)
class NewRegistration:
    """Everything about the registration being attempted, fixed before the first request is sent."""

    registration_id: str
    event_id: str
    user_id: str
    created_at: datetime
    idempotency_key: str
    fingerprint: str
    user_name: str | None = None
    answers: str | None = None  # checked against the event's questions at ``questions_version`` (JSON)
    questions_version: int = 0
    write_limit: int = 0  # the student's writes a minute, counted in the round's transaction (0: not counted)


def registration_create(*, event_id: str, user_id: str, idempotency_key: str, fingerprint: str,
                        user_name: str | None = None, answers: str | None = None, questions_version: int = 0,
                        now: datetime | None = None, sleep: Callable[[float], None] = time.sleep,
                        clock: Callable[[], datetime] = utcnow, write_limit: int = 0) -> RegistrationOutcome:
    """Register ``user_id`` for ``event_id`` exactly once per student and once per idempotency key.

    ``user_id`` is the student's immutable key (``tems.identity.user_key``); ``user_name`` is only shown. ``now``
    is the registration's time (``clock()`` if not given); ``clock`` is what a waitlist join reads the age of a
    lane's block against, and ``sleep`` what the pauses between rounds wait with. ``answers`` were checked
    (registrations.questions) against the event's questions at ``questions_version``; the seat's condition
    holds them to it. ``write_limit`` (``settings.TEMS_WRITE_RATE``; 0: none) is counted in the transaction that
    registers or answers "already registered" (tems.ratelimit.add_write_count); a replay is not counted again.

    One request when the seat is free and the key is new. Returns the 201 of a new registration (confirmed, or
    waitlisted with ``position_at_most``), the 200 of the student's registration, or the key's first response.
    Raises RegistrationError:
    'not_found' (no such event), 'unprocessable' (the key was used for another request), 'busy' (contention
    did not clear in time; nothing was written), 'precondition_failed' (the questions are no longer at
    ``questions_version``, ``extra`` ``questions_version`` the stored one; nothing was written). Raises
    WriteRateExceeded when the student's writes this minute are used up (nothing was written).
    """
    attempt = NewRegistration(registration_id=new_registration_id(), event_id=event_id, user_id=user_id,
                              created_at=now or clock(), idempotency_key=idempotency_key, fingerprint=fingerprint,
                              user_name=user_name, answers=answers, questions_version=questions_version,
                              write_limit=write_limit)
    route = Router(event_id=event_id, user_id=user_id, created_at=attempt.created_at, clock=clock,
                   heal=waitlist_promote_best_effort)
    conflicts = conflict_backoff(sleep)
    if (early := _first_read(attempt, route, sleep=sleep)) is not None:
        return early
    for _ in range(MAX_ROUNDS):
        shard = route.next_shard()
        if shard is None and not route.gate:
            # Every seat tried was full, the lane's gate open: close the event's gate, or find a free seat.
            try:
                route.close_gate()
            except GateBusy:
                conflicts.pause()
            continue
        try:
            join = route.plan_join() if shard is None else None
        except lanes.QueueBusy:
            conflicts.pause()  # held by a departure, or throttled: another lane only adds reads and claims there
            continue
        transaction, response = (join_transaction(attempt, join) if join is not None
                                 else confirm_transaction(attempt, shard))
        route.sending()
        cancelled = commit_round(transaction)
        if cancelled is not None and join is None:
            route.seat_missed(shard)
        if cancelled is UNKNOWN_OUTCOME:
            # An applied round is found by its conditions: the record replays, the claim answers, the gate is shut.
            conflicts.pause()
            continue
        if cancelled is not None:
            if cancelled.failed(IDEMPOTENCY):
                return _replay(cancelled.reasons[IDEMPOTENCY].raw_item, attempt)
            if cancelled.failed(CLAIM):
                claim = RegistrationClaim.from_raw_data(cancelled.reasons[CLAIM].raw_item)
                return _already_registered(claim, attempt, sleep=sleep)
            raise_if_write_rate_refused(cancelled, now=attempt.created_at)
            if join is None and cancelled.failed(SEAT):
                if moved := question_sets.questions_changed(cancelled.reasons[SEAT].raw_item, questions_version):
                    raise moved from None
                route.refused(shard, cancelled.reasons[SEAT].raw_item)
            elif join is not None and cancelled.codes & {CONDITIONAL_CHECK_FAILED}:
                lane = cancelled.reasons[LANE].raw_item if cancelled.failed(LANE) else None
                if moved := question_sets.questions_changed(lane, questions_version):
                    raise moved from None
                if not route.join_refused(join, lane):
                    ticket_pause(sleep)
            elif cancelled.is_conflict:
                conflicts.pause()  # the router reads after the pause, not before: a read before it is stale
                if join is None:
                    route.seat_conflicted(shard)
                else:
                    route.join_conflicted(join)
            else:
                raise
            continue
        if join is not None and not join.registers:
            route.join_landed(join)  # a stale block was retired: the next round takes a ticket
            continue
        if join is None:
            route.seat_taken(shard)
        return RegistrationOutcome(response, "created")
    raise busy_error("The waiting list for this event is moving fast; please try again in a moment.")


def _base_transaction(attempt: NewRegistration, *, status: str, position: int | None, ticket: int | None,
                      shard: int | None = None, lane: int | None = None) -> tuple[LabelledTransaction, StoredResponse]:
    """The items common to both kinds of new registration, with the response computed up front. The event-side
    copy is a confirmed registration's own item; a waitlisted one's is its waitlist entry, written here too."""
    body = registration_to_dict(
        registration_id=attempt.registration_id, event_id=attempt.event_id, user_id=attempt.user_id,
        status=status, position=position, created_at=attempt.created_at, user_name=attempt.user_name,
        position_is_bound=status == WAITLISTED,
    )
    response = StoredResponse.json(body, status=201)
    fields = {"registration_id": attempt.registration_id, "event_id": attempt.event_id,
              "user_id": attempt.user_id, "user_name": attempt.user_name, "status": status,
              "created_at": attempt.created_at, "ticket": ticket, "shard": shard, "lane": lane}
    answers = {"answers": attempt.answers} if attempt.answers else {}  # both copies, never the claim
    transaction = LabelledTransaction()
    add_completed_record(transaction, user_id=attempt.user_id, key=attempt.idempotency_key,
                         fingerprint=attempt.fingerprint, response=response, now=attempt.created_at)
    # Counted only in a round that registers: a refused round wrote nothing, so the next one counts once.
    add_write_count(transaction, user_id=attempt.user_id, limit=attempt.write_limit, now=attempt.created_at)
    transaction.save(
        CLAIM, RegistrationClaim(*RegistrationClaim.key_for(attempt.event_id, attempt.user_id), **fields),
        condition=RegistrationClaim.pk.does_not_exist(), return_old_on_failure=True,
    )
    transaction.save(USER_REGISTRATION,
                     Registration(*Registration.user_key_for(attempt.user_id, attempt.registration_id), **fields,
                                  **answers))
    index = attendees.index_fields(event_id=attempt.event_id, name=attempt.user_name or attempt.user_id,
                                   registration_id=attempt.registration_id)
    if status == WAITLISTED:
        transaction.save(WAITLIST_ENTRY, WaitlistEntry(
            *WaitlistEntry.key_for(attempt.event_id, ticket, lane), registration_id=attempt.registration_id,
            event_id=attempt.event_id, user_id=attempt.user_id, user_name=attempt.user_name, status=status,
            created_at=attempt.created_at, ticket=ticket, lane=lane, **index, **answers,
        ), condition=WaitlistEntry.pk.does_not_exist())
    else:
        transaction.save(EVENT_REGISTRATION,
                         Registration(*Registration.event_key_for(attempt.event_id, attempt.registration_id),
                                      **fields, **index, **answers))
    count_registered(transaction, event_id=attempt.event_id, shard=shard if lane is None else lane,
                     created_at=attempt.created_at, waiting=status == WAITLISTED)
    transaction.save(OUTBOX, outbox_message(
        message_type="RegistrationCreated", now=attempt.created_at,
        # "user" is the immutable key in every message, as in the cancel and promote ones: the relay finds the
        # recipient by it, never by a name someone else may hold by then.
        payload={**body, "user": attempt.user_id},
    ))
    return transaction, response


def confirm_transaction(attempt: NewRegistration, shard: int) -> tuple[LabelledTransaction, StoredResponse]:
    """One seat of one shard, and nothing else of the event: nobody waits while a shard has room (a seat freed
    with people waiting goes to the head in the same transaction, a raise goes to them first), so the seat's own
    condition is the whole "free seat nobody waits for" test."""
    transaction, response = _base_transaction(attempt, status=CONFIRMED, position=None, ticket=None, shard=shard)
    transaction.update(
        SEAT, SeatShard(*SeatShard.key_for(attempt.event_id, shard)),
        actions=[SeatShard.taken.add(1)],
        condition=(SeatShard.pk.exists() & (SeatShard.taken < SeatShard.capacity) & shards.admitting(attempt.created_at)
                   & question_sets.shard_condition(attempt.questions_version)),
        return_old_on_failure=True,
    )
    return transaction, response


def _unchanged(attribute, value: int | None):
    return attribute.does_not_exist() if value is None else attribute == value


def join_transaction(attempt: NewRegistration, join: Join) -> tuple[LabelledTransaction, StoredResponse | None]:
    """The round of ``join``: its ticket of the lane (a registration), and the lane's new block installed if the
    join claimed or found one; a stale block is installed as gone and registers nobody (response None)."""
    image, block = join.image, join.block
    # The lane's block is still what its image showed: two joiners of one lane never take the same ticket.
    condition = (SeatShard.pk.exists() & _unchanged(SeatShard.lane_next, image.lane_next)
                 & _unchanged(SeatShard.lane_end, image.lane_end) & shards.admitting(attempt.created_at)
                 & question_sets.shard_condition(attempt.questions_version))
    # Gate 1: closed. Gate 2 (RAISED): closed with seats of a raise waiting to go to the people waiting; a
    # newcomer finishes that promotion first, and joins behind them only if it could not.
    condition &= (SeatShard.gate >= CLOSED) if join.healed else (SeatShard.gate == CLOSED)
    if block is not None and block.stale:
        transaction, response, actions = LabelledTransaction(), None, [SeatShard.lane_next.set(block.end)]
    else:
        transaction, response = _base_transaction(attempt, status=WAITLISTED, position=join.position,
                                                  ticket=join.ticket, lane=join.lane)
        actions = [SeatShard.waiting.add(1), SeatShard.lane_next.set(join.ticket + 1)]
    if block is not None:
        # The claimed block becomes the lane's; what the old one did not hand out is gone, recorded in the
        # departure tree in this very transaction (positions stay exact), and ``left`` fixed if it was off.
        actions += [SeatShard.lane_end.set(block.end), SeatShard.lane_at.set(join.now),
                    SeatShard.lane_size.set(block.end - block.first), SeatShard.lane_left.set(join.left())]
        gone = [*range(*image.unissued), *(range(block.first, block.end) if block.stale else ())]
        if gone:
            positions.record_departures(transaction, event_id=attempt.event_id, tickets=gone)
        if join.correction():
            transaction.update(QUEUE, WaitlistQueue(*WaitlistQueue.key_for(attempt.event_id)),
                               actions=[WaitlistQueue.left.add(join.correction())],
                               condition=WaitlistQueue.pk.exists())
    transaction.update(LANE, SeatShard(*SeatShard.key_for(attempt.event_id, join.lane)), actions=actions,
                       condition=condition, return_old_on_failure=True)
    return transaction, response


def _first_read(attempt: NewRegistration, route: Router, *,
                sleep: Callable[[float], None]) -> RegistrationOutcome | None:
    """The read the router asks for instead of a first round it expects refused (``Router.start``), with the
    student's claim and the key's record in the same BatchGetItem, which would refuse that round too. A repeat
    tap (a retry, or a second tap with a new key) answered from the read sends no transaction, which would pay a
    whole registration's write units and hold a lane or a shard for a transaction's time, when the table is
    busiest. The read decides nothing: what it shows stood when it was read, as a refusal's image does, and an
    answer remembered from it is written under its own condition."""
    lane = route.start()
    if lane is None:
        return None
    try:
        found = {type(item): item for item in batch_get_models([
            (SeatShard, lane), (RegistrationClaim, RegistrationClaim.key_for(attempt.event_id, attempt.user_id)),
            (IdempotencyRecord, IdempotencyRecord.key_for(attempt.user_id, attempt.idempotency_key))])}
    except PynamoDBException as error:
        if response_code(error) in TRANSIENT:
            return None  # throttled past botocore's retries: the first round's conditions will say
        raise
    record = found.get(IdempotencyRecord)
    if record is not None and not record_expired(record, attempt.created_at):
        return _replay(record.serialize(), attempt)
    if (claim := found.get(RegistrationClaim)) is not None:
        return _already_registered(claim, attempt, sleep=sleep)
    route.started(found.get(SeatShard))
    return None


def _replay(raw_item: dict[str, Any], attempt: NewRegistration) -> RegistrationOutcome:
    return RegistrationOutcome(stored_answer(raw_item, attempt.fingerprint), "replayed")


def _already_registered(claim: RegistrationClaim, attempt: NewRegistration, *,
                        sleep: Callable[[float], None]) -> RegistrationOutcome:
    """The student holds a registration from another tap (the claim is the refusal's ALL_OLD image): answer 200
    with it and remember that under this key, one more request (a waitlisted one's position is read too)."""
    try:
        view = selectors.registration_view(registration=claim)
    except PynamoDBException as error:
        # A waitlisted claim's position is read from the lanes and the queue: throttled past botocore's retries
        # (the table's read capacity at the end of a burst) it is a 503, nothing stored, so a retry gets the answer.
        if response_code(error) in TRANSIENT:
            raise busy_error(CROWDED) from error
        raise
    response = StoredResponse.json(view, status=200)
    first = remember_answer(user_id=attempt.user_id, key=attempt.idempotency_key, fingerprint=attempt.fingerprint,
                            response=response, now=attempt.created_at, sleep=sleep,
                            write_limit=attempt.write_limit)
    if first is not None:
        return _replay(first, attempt)  # a duplicate of this very tap stored its answer first: the same bytes
    return RegistrationOutcome(response, "already_registered")
