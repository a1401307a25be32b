"""Cancelling a registration, passing a freed seat straight to the head of the waiting list."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from registrations import selectors
from registrations.errors import RegistrationError, cancelled_in_image, event_cancelled_error
from registrations.events.models import EventSeats
from registrations.models import (
    CANCELLED,
    CONFIRMED,
    OFFERED,
    WAITLISTED,
    Registration,
    RegistrationClaim,
    WaitlistEntry,
)
from registrations.offers.models import Offer
from registrations.offers.offer_writes import add_offer_end, offer_end_for
from registrations.reports.counting import count_gone
from registrations.seating import marks
from registrations.seating.gate import (
    add_freed,
    add_gate,
    nobody_in_lane,
    reopened_gate,
    reopened_lane,
)
from registrations.seating.models import SeatGate, SeatShard
from registrations.seating.shards import lane_count
from registrations.services.promotion import SeatWrites, add_to_head, head_left
from registrations.write_rules import (
    CLAIM,
    EVENT_REGISTRATION,
    EVENT_SEATS,
    IDEMPOTENCY,
    OUTBOX,
    USER_REGISTRATION,
    WAITLIST_ENTRY,
    StoredOutcome,
    busy_error,
    conflict_backoff,
    remember_outcome,
    stored_answer,
)
from tems.clock import utcnow
from tems.errors import DomainError
from tems.idempotency import (
    IdempotencyRecord,
    StoredResponse,
    add_completed_record,
    record_expired,
    replay_from_record,
)
from tems.outbox import outbox_message
from tems.transactions import LabelledTransaction, TransactionCancelled

CANCEL_MAX_ROUNDS = 16


def cancel_response(*, registration_id: str, event_id: str) -> StoredResponse:
    return StoredResponse.json({"registration_id": registration_id, "event_id": event_id, "status": CANCELLED},
                               status=200)


def registration_cancel(*, user_id: str, registration_id: str, now: datetime | None = None,
                        sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Cancel the caller's registration in one transaction, promoting the waitlist head into a freed seat.

    Deletes the claim and both registration items (and the waitlist entry of a waitlisted one), moves the
    counters and writes ``RegistrationCancelled`` to the outbox; a freed seat goes to the head of the waiting
    list in the same transaction, so the event is never over capacity and no seat sits free while someone waits.
    Returns ``{registration_id, event_id, status: "cancelled"}``. Raises RegistrationError: 'not_found' (no such
    registration of this user), 'conflict' (reason 'event_cancelled': the event was called off, its registrations
    stand as they were), 'busy' (contention did not clear in time; nothing was written).
    For a person's tap use ``registration_cancel_once``.
    """
    return _cancel(user_id=user_id, registration_id=registration_id, now=now or utcnow(), sleep=sleep).data


def registration_cancel_once(*, user_id: str, registration_id: str, idempotency_key: str, fingerprint: str,
                             now: datetime | None = None,
                             sleep: Callable[[float], None] = time.sleep) -> StoredOutcome:
    """``registration_cancel`` once per (user, idempotency key), the key's record inside the cancel's transaction.

    The record is born COMPLETED with the 200 it answers, in the same TransactWriteItems as the cancellation:
    a retry of the tap (lost answer, dead server, double tap) replays those bytes, never a 404 for the
    registration this very tap removed. Raises RegistrationError: 'not_found' (no such registration of this
    user, and this key cancelled nothing), 'unprocessable' (key used for another request), 'busy'.
    """
    return _cancel(user_id=user_id, registration_id=registration_id, now=now or utcnow(), sleep=sleep,
                   key=(idempotency_key, fingerprint))


def _cancel(*, user_id: str, registration_id: str, now: datetime, sleep: Callable[[float], None],
            key: tuple[str, str] | None = None) -> StoredOutcome:
    seen: Registration | None = None
    conflicts = conflict_backoff(sleep)
    for _ in range(CANCEL_MAX_ROUNDS):
        try:
            registration = selectors.registration_get(user_id=user_id, registration_id=registration_id)
        except RegistrationError:
            if key is not None:
                # A read only to explain the refusal: did this very key cancel it already?
                replay = _stored_outcome(user_id=user_id, key=key)
                if replay is not None:
                    return replay
            if seen is None:
                raise
            # A concurrent cancel of the same registration won: what was asked for is done.
            response = cancel_response(registration_id=registration_id, event_id=seen.event_id)
            return _remember(user_id=user_id, key=key, response=response, now=now, sleep=sleep)
        seen = registration
        freed = freed_seat(registration, now=now)
        if freed is None:
            continue
        response = cancel_response(registration_id=registration_id, event_id=registration.event_id)

        def build(freed: FreedSeat, registration: Registration = registration,
                  response: StoredResponse = response) -> LabelledTransaction:
            transaction = cancel_transaction(registration, freed, now=now)
            if key is not None:
                add_completed_record(transaction, user_id=user_id, key=key[0], fingerprint=key[1],
                                     response=response, now=now)
            return transaction

        try:
            FreeingCommit(freed, build).commit()
        except TransactionCancelled as cancelled:
            if cancelled.failed(IDEMPOTENCY):
                return StoredOutcome(stored_answer(cancelled.reasons[IDEMPOTENCY].raw_item, key[1]), replayed=True)
            if cancelled.failed(EVENT_SEATS) and (when := cancelled_in_image(cancelled.reasons[EVENT_SEATS].raw_item)):
                raise event_cancelled_error(when) from None
            if cancelled.only_conflicts:
                conflicts.pause()
            # Any failed condition means a read above is stale (a promotion, a new joiner, a concurrent cancel):
            # read again and rebuild; the loop is bounded.
            continue
        return StoredOutcome(response)
    raise busy_error("This registration is changing right now; please try again in a moment.")


def _stored_outcome(*, user_id: str, key: tuple[str, str]) -> StoredOutcome | None:
    try:
        record = IdempotencyRecord.get(*IdempotencyRecord.key_for(user_id, key[0]), consistent_read=True)
    except IdempotencyRecord.DoesNotExist:
        return None
    if record_expired(record):
        return None
    try:
        stored = replay_from_record(record, fingerprint=key[1])
    except DomainError as error:
        raise RegistrationError(error.code, error.detail) from None
    return StoredOutcome(stored, replayed=True) if stored is not None else None


def _remember(*, user_id: str, key: tuple[str, str] | None, response: StoredResponse, now: datetime,
              sleep: Callable[[float], None]) -> StoredOutcome:
    """Store ``response`` under the key in a transaction of its own (nothing else to change with it)."""
    if key is None:
        return StoredOutcome(response)
    return remember_outcome(user_id=user_id, key=key[0], fingerprint=key[1], response=response, now=now,
                            sleep=sleep)


# The first entries of the waiting list a cancel reads: when cancels run at once, each may find the ones before
# it already gone to the others and take the next, without reading every lane again. Each lane's Query returns up
# to this many entries: without answers to questions they fit in the one read unit a single entry costs.
HEADS_READ = 8


@dataclass(frozen=True)
class FreedSeat:
    """What a cancel reads about the seat it frees (nothing for a waitlisted registration): the shard it goes
    back to, the head it goes to instead (an offer until ``offer_ends_at``, or the seat), the lanes and gate,
    and who stood behind the head in that read."""

    head: WaitlistEntry | None = None
    shard: int | None = None
    lanes: list[SeatShard] = field(default_factory=list)
    gate: SeatGate | None = None
    offer_ends_at: datetime | None = None
    behind: tuple[WaitlistEntry, ...] = ()

    def passed_on(self, cancelled: TransactionCancelled) -> FreedSeat | None:
        """The same seat for the next in line, when ``cancelled`` was refused because the head had left (another
        freed seat went to it first); None: read again.

        Tickets only grow, so nobody can have joined ahead of the entries this read found: once the ones before
        it are known gone, the next one read is the head if it still waits, which its own conditions check."""
        if self.head is None or not self.behind or not head_left(cancelled):
            return None
        return replace(self, head=self.behind[0], behind=self.behind[1:])


class FreeingCommit:
    """Commits the transaction ``build`` makes for ``freed``; when it was refused because its head had left,
    builds it again for the next in line as read and commits that, so cancels that race for one head each take
    the next one instead of all reading every lane again. Duck-types ``LabelledTransaction.commit`` (and so
    ``commit_round``)."""

    def __init__(self, freed: FreedSeat, build: Callable[[FreedSeat], LabelledTransaction]) -> None:
        self.freed, self.build = freed, build

    def commit(self) -> None:
        """Raises the last refusal (``TransactionCancelled``) or whatever the commit raised."""
        while True:
            try:
                self.build(self.freed).commit()
                return
            except TransactionCancelled as cancelled:
                passed = self.freed.passed_on(cancelled)
                if passed is None:
                    raise
                self.freed = passed


def freed_seat(registration: Registration, *, now: datetime) -> FreedSeat | None:
    """Read where the seat of ``registration`` (confirmed, or offered) goes; None: read again (an edit added
    shards between the reads, or someone waits in a lane past the inner ones).

    When the seat reopens the gate (nobody waits, the event is full), the lanes past the inner ones are opened
    first (``marks.reopen_outer_lanes``): the cancel's own transaction reopens the gate and the inner ones."""
    if registration.status not in (CONFIRMED, OFFERED):
        return FreedSeat()
    shard = int(registration.shard)
    event, gate, lanes = selectors.waitlist_lanes_and_gate(event_id=registration.event_id)
    if gate is None:
        raise RegistrationError("not_found", f"There is no event with id {registration.event_id!r}.")
    if len(lanes) != int(gate.shards):
        return None  # an edit added shards between the event's read and the lanes': read again
    heads = selectors.waitlist_heads(event_id=registration.event_id, limit=HEADS_READ, lanes=(event, lanes))
    if not heads and gate.closed and not marks.reopen_outer_lanes(event_id=registration.event_id,
                                                                  count=len(lanes), gate=gate):
        return None
    return FreedSeat(head=heads[0] if heads else None, shard=shard, lanes=lanes, gate=gate,
                     offer_ends_at=offer_end_for(event, now=now), behind=tuple(heads[1:]))


def cancel_transaction(registration: Registration, freed: FreedSeat, *, now: datetime,
                       offer_end: str = Offer.DECLINED) -> LabelledTransaction:
    """The cancel of ``registration`` as one transaction (not committed). An offered registration's offer ends
    as ``offer_end`` in it (declined: the student gave it up; expired: the clock did)."""
    head, shard, lanes, gate = freed.head, freed.shard, freed.lanes, freed.gate
    event_id, user_id, registration_id = registration.event_id, registration.user_id, registration.registration_id
    transaction = LabelledTransaction()
    transaction.delete(CLAIM, RegistrationClaim(*RegistrationClaim.key_for(event_id, user_id)),
                       condition=RegistrationClaim.registration_id == registration_id)
    # The status we read decides which counter moves, so the delete only applies if it is still that status.
    transaction.delete(USER_REGISTRATION, Registration(*Registration.user_key_for(user_id, registration_id)),
                       condition=Registration.status == registration.status)
    transaction.save(OUTBOX, outbox_message(message_type="RegistrationCancelled", now=now, payload={
        "registration_id": registration_id, "event_id": event_id, "user": user_id,
        "previous_status": registration.status,
    }))
    if registration.status == OFFERED:
        add_offer_end(transaction, user_id=user_id, registration_id=registration_id, state=offer_end, now=now)
    was_waiting = registration.status == WAITLISTED
    count_gone(transaction, event_id=event_id, shard=int(registration.lane if was_waiting else registration.shard),
               created_at=registration.created_at, now=now, was_waiting=was_waiting,
               offer_end=offer_end if registration.status == OFFERED else None)
    writes = SeatWrites(event_id)
    # Every branch checks the event's item: that the event is not cancelled: its registrations stand as they were
    # when it was called off (the cancellation's mail goes to each of them), and no freed seat goes to anyone.
    writes.event(condition=EventSeats.cancelled_at.does_not_exist())
    if registration.status == WAITLISTED:
        # The entry is the registration's event-side copy: it carries its status.
        entry = WaitlistEntry(*WaitlistEntry.key_for(event_id, int(registration.ticket), int(registration.lane)),
                              ticket=int(registration.ticket), lane=int(registration.lane))
        transaction.delete(WAITLIST_ENTRY, entry, condition=(WaitlistEntry.registration_id == registration_id)
                           & (WaitlistEntry.status == WAITLISTED))
        writes.depart(transaction, [entry])
        writes.add_to(transaction)
        return transaction
    transaction.delete(EVENT_REGISTRATION, Registration(*Registration.event_key_for(event_id, registration_id)),
                       condition=Registration.status == registration.status)
    if head is not None:
        # The freed seat passes straight to the head, in the same shard: the shard stays full, the list shrinks.
        add_to_head(transaction, head, now=now, shard=shard, offer_ends_at=freed.offer_ends_at)
        writes.depart(transaction, [head])
    elif gate.closed:
        # Nobody was waiting when we looked, and the event was full: the seat goes back to its shard and the
        # waiting list's gate opens, on the gate item and every lane, under the condition that nobody is in any
        # lane (a joiner needs its lane's gate closed, so of a join and this cancel only one commits) and that
        # the gate did not reopen since the read (then the lanes read are all there are).
        gate_actions, gate_condition = reopened_gate(gate, shards=int(gate.shards))
        add_gate(transaction, event_id=event_id, actions=gate_actions, condition=gate_condition)
        for lane in lanes[:lane_count(len(lanes))]:
            writes.shard(int(lane.shard), actions=reopened_lane(gate), condition=nobody_in_lane())
        writes.shard(shard, actions=[SeatShard.taken.add(-1)], condition=SeatShard.taken > 0)
    else:
        # Nobody was waiting and the gate is open: the seat goes back to the shard it came from, under the
        # condition that the gate is still open, and the gate's epoch moves, so a close that read this shard
        # full before now fails its own condition: of the two only one takes effect.
        add_freed(transaction, event_id=event_id)
        writes.shard(shard, actions=[SeatShard.taken.add(-1)], condition=SeatShard.taken > 0)
    writes.add_to(transaction)
    return transaction
