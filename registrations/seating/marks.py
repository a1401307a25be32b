"""Writes that touch every seat shard of an event, when its shards do not all fit in one transaction.

An event has up to ``shards.MAX_SHARDS`` seat shards, but DynamoDB takes at most 100 items per TransactWriteItems.
Every shard is a lane of the waiting list; the first ``shards.MAX_LANES`` are its inner lanes: a write of every
shard puts them in its own transaction (``add_to_lanes``), with the event's item, so what they carry changes
atomically with it. The shards past them (the outer lanes) are written in groups of ``shards.GROUP_SIZE``, one
transaction each, ordered so that the event's rules hold at every instant between the groups
(docs/registrations.md, "Seat shards"):

- a mark that *refuses* (a cancellation) goes on them before the event's own transaction (``write_seat_only``):
  a shard refuses a little early, never admits late;
- a new event's shards are put before the transaction that makes the event (``put_seat_only``): nobody can
  reach a shard of an event that does not exist yet;
- copies that may admit someone the old ones refused (a new start, window or questions) are written after a
  hold (``registrations.seating.holds``): no seat is taken on a held shard;
- the gate's copy is opened on them before the transaction that reopens the gate (``reopen_outer_lanes``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pynamodb.expressions.update import Action

from registrations.seating import shards
from registrations.seating.gate import add_gate, nobody_in_lane, reopened_lane
from registrations.seating.models import SeatGate, SeatShard
from registrations.write_rules import WRITE_POLICY, busy_error
from tems.transactions import LabelledTransaction, TransactionCancelled

BUSY = "This event's seats are changing right now; try again."


def add_to_lanes(transaction: LabelledTransaction, *, event_id: str, count: int, actions: Callable[[], list[Action]],
                 condition=None, label: str = "shard") -> None:
    """Write ``actions()`` on each of the event's lanes (its first ``lane_count(count)`` shards) in
    ``transaction``, each under ``condition`` (and that it exists), labelled ``<label>_<k>``."""
    condition = SeatShard.pk.exists() if condition is None else SeatShard.pk.exists() & condition
    for shard in range(shards.lane_count(count)):
        transaction.update(f"{label}_{shard}", SeatShard(*SeatShard.key_for(event_id, shard)), actions=actions(),
                           condition=condition)


def write_seat_only(*, event_id: str, count: int, actions: Callable[[], list[Action]], condition=None,
                    check: Callable[[LabelledTransaction], None] | None = None) -> None:
    """Write ``actions()`` on every shard past the lanes, one transaction per group, each shard under
    ``condition`` (and that it exists); ``check`` adds to each group's transaction what must still hold for it
    (a ConditionCheck of the item the write follows). Idempotent when the actions are (a SET of a value). Raises
    TransactionCancelled when a condition failed, RegistrationError('busy') when DynamoDB kept refusing."""
    condition = SeatShard.pk.exists() if condition is None else SeatShard.pk.exists() & condition
    for group in shards.seat_only(count):
        def attempt(group: list[int] = group) -> None:
            transaction = LabelledTransaction()
            for shard in group:
                transaction.update(f"shard_{shard}", SeatShard(*SeatShard.key_for(event_id, shard)),
                                   actions=actions(), condition=condition, return_old_on_failure=True)
            if check is not None:
                check(transaction)
            transaction.commit()

        WRITE_POLICY.run(attempt, busy=lambda _: busy_error(BUSY))


def put_seat_only(new: Iterable[SeatShard]) -> None:
    """Put a new event's shards past its lanes, one transaction per group, each under "not there yet": a retry
    of the same creation finds its own group there and goes on (the event's own transaction decides)."""
    new = list(new)
    if not new:
        return
    count = int(new[0].shards)
    by_shard = {int(shard.shard): shard for shard in new}
    for group in shards.seat_only(count):
        def attempt(group: list[int] = group) -> None:
            transaction = LabelledTransaction()
            for shard in group:
                transaction.save(f"shard_{shard}", by_shard[shard], condition=SeatShard.pk.does_not_exist())
            transaction.commit()

        try:
            WRITE_POLICY.run(attempt, busy=lambda _: busy_error(BUSY))
        except TransactionCancelled:
            # A group is put whole or not at all: a refused "not there yet" means an earlier attempt of this
            # creation put it (a tap's event id follows from its key), and the event's own transaction decides.
            continue


def reopen_outer_lanes(*, event_id: str, count: int, gate: SeatGate) -> bool:
    """Open the gate's copy on the lanes past the inner ones (every shard is a lane; only the inner ones fit in the
    transaction that reopens the gate), one group per transaction, each lane under the condition that nobody
    waits in it and the group under the condition that the gate has not reopened since ``gate`` was read. Run
    before that transaction, which reopens the gate and the inner lanes under "nobody waits in them":

    - a lane opened here takes no join (a join needs its lane closed) and cannot close again by a copy of the
      gate before the gate's reopening lands: the copy is conditioned on the gate's reopening count, which this
      write moved ahead on the lane; its newcomers join an inner lane meanwhile (``router.close_gate``);
    - so when the gate's transaction commits, nobody waits anywhere, and if someone joined an inner lane in
      between it is refused and the seat goes to the head instead.

    Returns False when someone waits in an outer lane or the gate moved (read again: the head is found there).
    A reopening refused after this leaves the outer lanes open until the next one, their newcomers on the inner
    lanes: slower to join, never wrong. Idempotent (SETs of the reopening's values)."""

    def still(transaction: LabelledTransaction) -> None:
        add_gate(transaction, event_id=event_id, condition=SeatGate.opened == int(gate.opened))

    try:
        write_seat_only(event_id=event_id, count=count, actions=lambda: reopened_lane(gate),
                        condition=nobody_in_lane(), check=still)
    except TransactionCancelled:
        return False
    return True
