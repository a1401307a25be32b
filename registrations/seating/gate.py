"""The waiting list's gate (``SeatGate``): closed by one write under the epoch its closer read, copied into each
lane by one write under the reopening count, and opened only in a transaction that opens every lane.

The promise it keeps: someone waits => every shard is full. A join needs its lane's gate closed; a lane closes
only while the event's gate is closed (``lane_copy``); the event's gate closes only if every shard was full
at one instant (``gate_close``: every shard seen full after the epoch was read, the write conditioned on it);
every write that frees a seat for newcomers while the gate is open bumps the epoch in its own transaction
(``add_freed``), and one that frees a seat while it is closed hands the seat to the head or reopens the gate
(``add_reopened``, on every lane, under the condition that nobody waits in it). See docs/registrations.md,
"The gate".
"""

from __future__ import annotations

from collections.abc import Iterable

from pynamodb.exceptions import PynamoDBException, UpdateError

from registrations.seating.models import SeatGate, SeatShard
from tems.transactions import TRANSIENT, LabelledTransaction, is_conditional_check_failed, response_code

# SeatGate.state (and each lane's copy, SeatShard.gate): absent or 0 open; CLOSED while the event is full;
# RAISED while it is full and a raise of its capacity waits to be handed to the people waiting.
OPEN = 0
CLOSED = 1
RAISED = 2
GATE = "gate"  # the gate item's label in a transaction



class GateBusy(Exception):
    """The gate or a lane could not be read or written just now (``tems.transactions.TRANSIENT``)."""


def gate_get(*, event_id: str) -> SeatGate | None:
    """The event's gate (born with the event), strongly consistent; None when there is no such event."""
    try:
        return SeatGate.get(*SeatGate.key_for(event_id), consistent_read=True)
    except SeatGate.DoesNotExist:
        return None
    except PynamoDBException as error:
        if response_code(error) in TRANSIENT:
            raise GateBusy() from error
        raise


def new_gate(*, event_id: str, shards: int, state: int = OPEN) -> SeatGate:
    return SeatGate(*SeatGate.key_for(event_id), event_id=event_id, state=state, epoch=0, opened=0, shards=shards)


def gate_close(*, gate: SeatGate) -> bool:
    """Close ``gate`` (as read, open) by ONE UpdateItem under the condition that its epoch is still the one read.

    The caller saw every shard full *after* a read of the gate at this epoch (in its own read of the shards, or
    in images its process had from requests sent after such a read): if the epoch held, no seat was freed since,
    so every shard was full when this write landed and no newcomer can be sent past a free seat. True if closed;
    False if the epoch moved, the shard count changed or someone else closed it (look again).
    """
    closed = _updated(SeatGate(*SeatGate.key_for(gate.event_id)), actions=[SeatGate.state.set(CLOSED)],
                      condition=SeatGate.pk.exists() & unchanged_since(gate))
    if closed:
        gate.state = CLOSED
    return closed


def unchanged_since(gate: SeatGate):
    """The gate is still open, at the epoch and shard count read: no seat was freed since."""
    return (SeatGate.state == OPEN) & (SeatGate.epoch == int(gate.epoch)) & (SeatGate.shards == int(gate.shards))


def lane_copy(*, gate: SeatGate, lane: int, inner: bool = True) -> int | None:
    """Copy the closed ``gate`` (as read) into lane ``lane``: ONE UpdateItem of the lane, under the condition that
    the lane's ``opened`` is the gate's as read (the gate did not reopen since: a reopening writes every lane's
    ``opened``) and that the lane is still open. So a lane is closed only while the event's gate is, and a lane
    join still touches its lane only. A lane past the ``inner`` ones copies RAISED as CLOSED: only the inner
    lanes are written when the raise is handed out, and a newcomer joining behind it there overtakes nobody.
    Returns the state copied; None if the condition failed (read the lane again)."""
    state = int(gate.state) if inner else CLOSED
    copied = _updated(SeatShard(*SeatShard.key_for(gate.event_id, lane)), actions=[SeatShard.gate.set(state)],
                      condition=SeatShard.pk.exists() & lane_open() & same_opened(int(gate.opened)))
    return state if copied else None


def _updated(item, *, actions: list, condition) -> bool:
    """One conditional UpdateItem: True if applied, False if its condition failed; GateBusy if DynamoDB did not
    take it just then."""
    try:
        item.update(actions=actions, condition=condition)
    except UpdateError as error:
        if response_code(error) in TRANSIENT:
            raise GateBusy() from error
        if not is_conditional_check_failed(error):
            raise
        return False
    return True


def lane_open():
    """A lane's copy of the gate is open: absent (never closed) or 0."""
    return SeatShard.gate.does_not_exist() | (SeatShard.gate == OPEN)


def same_opened(opened: int):
    # A lane never written by a reopening has no ``opened``: it counts as 0, like a new gate's.
    return (SeatShard.opened == opened) | SeatShard.opened.does_not_exist() if opened == 0 \
        else SeatShard.opened == opened


def add_gate(transaction: LabelledTransaction, *, event_id: str, actions: Iterable = (), condition=None) -> None:
    """Write (or only check) the event's gate in ``transaction``; it must exist."""
    condition = SeatGate.pk.exists() if condition is None else SeatGate.pk.exists() & condition
    actions = list(actions)
    if actions:
        transaction.update(GATE, SeatGate(*SeatGate.key_for(event_id)), actions=actions, condition=condition)
    else:
        transaction.condition_check(GATE, SeatGate, *SeatGate.key_for(event_id), condition=condition)


def add_freed(transaction: LabelledTransaction, *, event_id: str) -> None:
    """A seat goes back to its shard for newcomers: only while the gate is open, and its epoch moves, so a close
    that read the shards before this commits fails its condition."""
    add_gate(transaction, event_id=event_id, actions=[SeatGate.epoch.add(1)], condition=SeatGate.state == OPEN)


def reopened_gate(gate: SeatGate, *, shards: int):
    """The gate's actions and condition for a reopening (nobody waits): open, a new epoch and a new reopening
    count, which the same transaction writes on every one of the ``shards`` lanes (``reopened_lane``)."""
    opened = int(gate.opened)
    return ([SeatGate.state.set(OPEN), SeatGate.epoch.add(1), SeatGate.opened.set(opened + 1),
             SeatGate.shards.set(shards)],
            (SeatGate.opened == opened) & (SeatGate.shards == int(gate.shards)))


def reopened_lane(gate: SeatGate):
    """A lane's actions for a reopening of ``gate`` (as read); its condition, that nobody waits in it, is the
    caller's (the lane may be written for other reasons in the same transaction)."""
    return [SeatShard.gate.set(OPEN), SeatShard.opened.set(int(gate.opened) + 1)]


def nobody_in_lane():
    return SeatShard.waiting.does_not_exist() | (SeatShard.waiting == 0)
