"""Giving an event created before the seat shards its shards (``manage.py shard_seats``, or lazily on first use)."""

from __future__ import annotations

from registrations import seats
from registrations.models import EventSeats, SeatShard
from registrations.services.common import EVENT_SEATS, WRITE_POLICY, _busy, layout_as_read
from tems.transactions import LabelledTransaction, TransactionCancelled

# The waiting list's gate on every seat shard (SeatShard.gate): absent or 0 open, CLOSED while the event is full,
# RAISED while it is full and a raise of its capacity waits to be handed to the people waiting.
CLOSED = 1
RAISED = 2


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
                starts_at, layout: int | None, reopen: bool = False, raised: bool = False) -> None:
    """Give the event's shards the slices ``sizes`` (adding shards past those read), in ``transaction``.

    Each existing shard's new slice is conditioned on ``taken <= slice``, never on what was read: a seat taken
    meanwhile is fine as long as it still fits, so only a slice that no longer holds its seats fails. A new
    shard takes the event's ``layout`` as read; the caller's write of the event checks it is still that. With
    ``reopen`` (nobody waits: the new slices are for newcomers) the waiting list's gate opens on every shard,
    under the condition that nobody is in its lane. With ``raised`` (people wait and the capacity grew beyond
    the slices) the gate says so, and newcomers finish handing those seats out before they join.
    """
    existing = {int(shard.shard) for shard in shards_read}
    for shard, size in enumerate(sizes):
        if shard in existing:
            actions = [SeatShard.capacity.set(size), SeatShard.shards.set(len(sizes)),
                       SeatShard.starts_at.set(starts_at)]
            condition = SeatShard.pk.exists() & (SeatShard.taken <= size)
            if reopen:
                actions.append(SeatShard.gate.set(0))
                condition &= SeatShard.waiting.does_not_exist() | (SeatShard.waiting == 0)
            elif raised:
                # People wait (so the gate is closed: every shard is full) and the raise is theirs first.
                actions.append(SeatShard.gate.set(RAISED))
                condition &= SeatShard.gate >= CLOSED
            transaction.update(f"shard_{shard}", SeatShard(*SeatShard.key_for(event_id, shard)), actions=actions,
                               condition=condition, return_old_on_failure=True)
        else:
            transaction.save(f"shard_{shard}", SeatShard(
                *SeatShard.key_for(event_id, shard), event_id=event_id, shard=shard, shards=len(sizes),
                capacity=size, taken=0, starts_at=starts_at, layout=layout), condition=SeatShard.pk.does_not_exist())


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
