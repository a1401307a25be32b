"""Giving an event created before the seat shards its shards (``manage.py shard_seats``, or lazily on first use)."""

from __future__ import annotations

from pynamodb.exceptions import PutError

from registrations import seats
from registrations.errors import RegistrationError
from registrations.models import EventSeats, SeatGate, SeatShard
from registrations.services.common import EVENT_SEATS, WRITE_POLICY, _busy, layout_as_read
from registrations.services.gate import (
    CLOSED,
    GATE,
    OPEN,
    RAISED,
    GateBusy,
    add_gate,
    gate_get,
    new_gate,
    nobody_in_lane,
    reopened_gate,
    reopened_lane,
)
from tems.transactions import (
    TRANSIENT,
    LabelledTransaction,
    TransactionCancelled,
    is_conditional_check_failed,
    response_code,
)


def shard_event(*, event_id: str) -> bool:
    """Move an old event's ``registered_count`` into seat shards, in one transaction; True if this call did it.

    The counters are read, then written under the condition that they are still what was read and that the
    event has no shards yet, so a registration or cancel in between (or another migration) fails it and it
    reads again; an event that already has shards is left alone. Taken seats fill the slices in shard order.
    With people waiting behind free seats (a promotion that never finished) only the taken seats are sliced and
    the rest is left for the promotion to hand to the waiting list first (the gate RAISED until it has).
    """
    for _ in range(16):
        try:
            event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return False
        if event.seat_shards:
            return False
        capacity, taken = int(event.capacity), int(event.registered_count or 0)
        waiting = int(event.waitlist_count or 0)
        sliced = taken if waiting and taken < capacity else max(capacity, taken)
        # Seats left for the promotion: the gate says RAISED, so no newcomer closes it and joins (or takes one)
        # before the people already waiting have them.
        gate = RAISED if sliced < capacity else None
        count = seats.shard_count(sliced)
        slice_sizes = seats.slices(sliced, count)
        transaction = LabelledTransaction()
        left = taken
        for shard, size in enumerate(slice_sizes):
            held = min(left, size)
            left -= held
            transaction.save(f"shard_{shard}", SeatShard(
                *SeatShard.key_for(event_id, shard), event_id=event_id, shard=shard, shards=count, capacity=size,
                taken=held, starts_at=event.starts_at, layout=event.layout, gate=gate),
                condition=SeatShard.pk.does_not_exist())
        transaction.save(GATE, new_gate(event_id=event_id, shards=count, state=gate or OPEN),
                         condition=SeatGate.pk.does_not_exist())
        transaction.update(
            EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
            actions=[EventSeats.seat_shards.set(count), EventSeats.sliced.set(sliced),
                     EventSeats.registered_count.remove()],
            condition=(EventSeats.seat_shards.does_not_exist() & (EventSeats.capacity == capacity)
                       & _counter_is(EventSeats.registered_count, taken)
                       & _counter_is(EventSeats.waitlist_count, waiting)
                       & layout_as_read(EventSeats.layout, event.layout)),
        )
        try:
            WRITE_POLICY.run(transaction.commit, busy=lambda _: _busy("This event is busy; try again."))
        except TransactionCancelled:
            continue  # the counters moved, or someone else gave it shards: look again
        return True
    raise _busy("This event's seats are changing too fast to move them into shards now; try again.")


def gate_of(*, event_id: str) -> SeatGate:
    """The event's gate (``SeatGate``), strongly consistent; made first for an event from before the gate item.

    Such an event's shards all carry the same gate (it was closed and opened on every shard in one
    transaction), and nothing changes it while the event has no gate item, since every write that closes, copies
    or opens a gate, or frees a seat, writes the gate item too: so the gate made from them is put under
    ``attribute_not_exists`` and never contradicts them. Raises RegistrationError('not_found') for no such event,
    GateBusy when DynamoDB does not answer in time.
    """
    for _ in range(4):
        gate = gate_get(event_id=event_id)
        if gate is not None:
            return gate
        try:
            event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
        if not event.seat_shards:
            shard_event(event_id=event_id)  # makes the gate with the shards
            continue
        count = int(event.seat_shards)
        state = max((int(lane.gate or 0) for lane in seats.shards_get(event_id=event_id, count=count)), default=OPEN)
        try:
            new_gate(event_id=event_id, shards=count, state=state).save(condition=SeatGate.pk.does_not_exist())
        except PutError as error:
            if response_code(error) in TRANSIENT:
                raise GateBusy() from error
            if not is_conditional_check_failed(error):
                raise
    raise _busy("This event's seats are changing right now; try again.")


def _counter_is(counter, value: int):
    # A counter never written reads as 0 (the model's default), so 0 also matches an absent attribute.
    return (counter == value) | counter.does_not_exist() if value == 0 else counter == value


def freeable_shard(*, event_id: str, registration_shard: int | None) -> int:
    """The shard a confirmed registration's cancel frees: its own, or for one confirmed before the shards (no
    ``shard``), the shard with the most seats taken (the cancel's ``taken > 0`` condition decides)."""
    if registration_shard is not None:
        return int(registration_shard)
    event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    if not event.seat_shards:
        shard_event(event_id=event_id)
        event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    shards = seats.shards_get(event_id=event_id, count=int(event.seat_shards))
    return int(max(shards, key=lambda shard: int(shard.taken)).shard) if shards else 0


def add_reslice(transaction: LabelledTransaction, *, event_id: str, shards_read: list[SeatShard], sizes: list[int],
                starts_at, layout: int | None, gate: SeatGate, reopen: bool = False, raised: bool = False) -> None:
    """Give the event's shards the slices ``sizes`` (adding shards past those read), in ``transaction``.

    Each existing shard's new slice is conditioned on ``taken <= slice``, never on what was read: a seat taken
    meanwhile is fine as long as it still fits, so only a slice that no longer holds its seats fails. A new
    shard takes the event's ``layout`` as read; the caller's write of the event checks it is still that. The
    gate (``gate`` as read) moves its epoch (slices may free seats), under the condition that it did not reopen
    and has as many shards as read. With ``reopen`` (nobody waits: the new slices are for newcomers) the gate
    opens, and every lane with it under the condition that nobody is in it. With ``raised`` (people wait, so the
    gate is closed, and the capacity grew beyond the slices) the gate and every lane say so, and newcomers
    finish handing those seats out before they join.
    """
    opened = int(gate.opened)
    if reopen:
        gate_actions, gate_condition = reopened_gate(gate, shards=len(sizes))
    else:
        gate_actions = [SeatGate.shards.set(len(sizes)), SeatGate.epoch.add(1)]
        gate_condition = (SeatGate.opened == opened) & (SeatGate.shards == int(gate.shards))
    if raised:
        gate_actions.append(SeatGate.state.set(RAISED))
        gate_condition &= SeatGate.state >= CLOSED
    add_gate(transaction, event_id=event_id, actions=gate_actions, condition=gate_condition)
    existing = {int(shard.shard) for shard in shards_read}
    for shard, size in enumerate(sizes):
        if shard in existing:
            actions = [SeatShard.capacity.set(size), SeatShard.shards.set(len(sizes)),
                       SeatShard.starts_at.set(starts_at)]
            condition = SeatShard.pk.exists() & (SeatShard.taken <= size)
            if reopen:
                actions += reopened_lane(gate)
                condition &= nobody_in_lane()
            elif raised:
                actions.append(SeatShard.gate.set(RAISED))
            transaction.update(f"shard_{shard}", SeatShard(*SeatShard.key_for(event_id, shard)), actions=actions,
                               condition=condition, return_old_on_failure=True)
        else:
            transaction.save(f"shard_{shard}", SeatShard(
                *SeatShard.key_for(event_id, shard), event_id=event_id, shard=shard, shards=len(sizes),
                capacity=size, taken=0, starts_at=starts_at, layout=layout, gate=RAISED if raised else None,
                opened=opened + 1 if reopen else opened), condition=SeatShard.pk.does_not_exist())


def planned_sizes(*, target: int, count: int, shards_read: list[SeatShard]) -> list[int]:
    """Slices of ``target`` seats over at least ``count`` shards (more if the rule asks), each holding the seats
    it had taken when read; when they cannot all fit, an even split whose failed conditions will say so."""
    count = max(count, seats.shard_count(target))
    taken = [0] * count
    for shard in shards_read:
        if int(shard.shard) < count:
            taken[int(shard.shard)] = int(shard.taken)
    try:
        return seats.slices(target, count, floors=taken)
    except ValueError:
        return seats.slices(target, count)
