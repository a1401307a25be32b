"""Waitlist positions at a cost that does not grow with the queue: ticket minus departures minus unused tickets.

**Positions.** Every ticket below ``t`` was handed out (to an entry still waiting, or one that left), or is
still unused in a lane's current block, or was recorded as gone with an old block. So::

    position(t) = t - departed(tickets < t) - unused(tickets < t in the lanes' current and pending blocks)

``departed`` is kept in a tree of counters (``WaitlistDepartures``), base ``FANOUT``, ``LEVELS`` deep. A
departure of ticket ``s`` adds 1 to one digit of one node per level, in the very transaction that deletes the
entry (a cancellation's or a promotion's), so the counters can never disagree with the entries. Reading
``departed(tickets < t)`` needs, per level, the digits below ``t``'s digit in ``t``'s own node: at most one node
per non-zero digit of ``t`` (position 10,000 reads one node, 9,999 reads two), fetched with one BatchGetItem.

Joining writes no counter at all: a burst of joiners touches nothing this module adds. Departures already
write the event's seat counters in their transactions; their counter nodes are written by no one else. See
docs/registrations.md ("Positions") for the designs rejected, and its journal for the cost on a hot event.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence

from registrations.events.models import Event, EventSeats
from registrations.seating.hints import hints
from registrations.seating.models import SeatShard, WaitlistDepartures, WaitlistQueue
from registrations.seating.shards import ticket_lanes
from tems.dynamo import batch_get_models
from tems.transactions import LabelledTransaction

FANOUT = WaitlistDepartures.FANOUT
LEVELS = WaitlistDepartures.LEVELS
# Labels of the counter updates in a transaction: one per node, e.g. "waitlist_left_0_0000000003".
LABEL_PREFIX = "waitlist_left"
# DynamoDB's limit of items in one TransactWriteItems.
MAX_TRANSACTION_ITEMS = 100

Node = tuple[int, int]  # (level, block)


def _digits(ticket: int) -> list[tuple[int, int, int]]:
    """(level, block, digit) of ``ticket`` at every level."""
    return [(level, ticket // FANOUT ** (level + 1), ticket // FANOUT ** level % FANOUT) for level in range(LEVELS)]


def departure_nodes(tickets: Iterable[int]) -> Counter[tuple[int, int, int]]:
    """How much each (level, block, digit) counter moves when ``tickets`` leave the waiting list."""
    moves: Counter[tuple[int, int, int]] = Counter()
    for ticket in tickets:
        moves.update(_digits(int(ticket)))
    return moves


def departure_item_count(tickets: Iterable[int]) -> int:
    """How many counter items a departure of ``tickets`` writes (for fitting a transaction's item budget)."""
    return len({(level, block) for level, block, _ in departure_nodes(tickets)})


def record_departures(transaction: LabelledTransaction, *, event_id: str, tickets: Sequence[int]) -> None:
    """Count ``tickets`` as gone from the event's waiting list, inside ``transaction`` (one update per node).

    The caller's transaction also deletes those tickets' entries: counters and entries move together or not at
    all. ADD creates a node the first time anyone leaves from its block, so no set-up is needed.
    """
    by_node: dict[Node, dict[int, int]] = {}
    for (level, block, digit), amount in departure_nodes(tickets).items():
        by_node.setdefault((level, block), {})[digit] = amount
    for (level, block), digits in sorted(by_node.items()):
        node = WaitlistDepartures(*WaitlistDepartures.key_for(event_id, level, block))
        actions = [getattr(WaitlistDepartures, WaitlistDepartures.digit_name(digit)).add(amount)
                   for digit, amount in sorted(digits.items())]
        actions.append(WaitlistDepartures.entity.set("WaitlistDepartures"))
        transaction.update(f"{LABEL_PREFIX}_{level}_{block:010d}", node, actions=actions)


def fit_batch(tickets: Sequence[int], *, items_per_ticket: int, fixed_items: int) -> int:
    """How many of ``tickets`` (in order) one transaction can move with their counter items: at least one."""
    fitted = 1
    for n in range(2, len(tickets) + 1):
        if fixed_items + n * items_per_ticket + departure_item_count(tickets[:n]) > MAX_TRANSACTION_ITEMS:
            break
        fitted = n
    return min(fitted, len(tickets))


def _reads(ticket: int) -> list[tuple[Node, int]]:
    """The nodes (and how many of their digits) to sum for the departures before ``ticket``."""
    return [((level, block), digit) for level, block, digit in _digits(ticket) if digit > 0]


# A lane's unused tickets [lane_next, lane_end) only shrink from below (lane_next grows) until the lane installs a
# newer block, and a newer block is claimed on the queue item first. So a lane whose last image in this process
# (``hints.lane``) showed no unused ticket below t, and whose latest claim on the queue item (read strongly
# consistent with the departure nodes) is still the block that image showed installed, has none below t now: a
# position skips reading it. Exact however old the image, as long as it was read before the queue item (an image
# read after it may show a block the queue read saw pending, installed since with the old block's unused tickets
# recorded as departures the departure read missed). At the end of a burst, reading every lane for every
# waiting student's position was a large share of the table's reads.


def _settled_below(event_id: str, shard: int, queue: WaitlistQueue | None, ticket: int,
                   queue_asked_at: float) -> int | None:
    """The lane's ``lane_end`` as this process last read it, if that image was read before the queue item (asked
    for at ``queue_asked_at``), is still the lane's block (no claim since) and had no unused ticket below
    ``ticket``; None when the lane must be read."""
    image = hints.lane(event_id, shard)
    if image is None or image[0] >= queue_asked_at:
        return None
    _, lane_next, lane_end = image
    last = None
    if queue is not None and queue.claim_last is not None:
        last = queue.claim_last.as_dict().get(str(shard))
    installed = None if lane_end is None else lane_end - 1
    if (None if last is None else int(last)) != installed:
        return None  # a block claimed since, or (no claim at all) an image from before: read the lane
    start = int(lane_next or 0)
    if unused_below([(start, max(int(lane_end or 0), start))], ticket):
        return None
    return lane_end if lane_end is not None else -1


def lane_blocks(event_ids: Iterable[str], *, shard_counts: dict[str, int] | None = None,
                queues: dict[str, WaitlistQueue] | None = None, queues_asked_at: float | None = None,
                below: dict[str, int] | None = None) -> dict[str, list[tuple[int, int]]]:
    """Each event's unused block tickets, [start, end) per block: the rest of each lane's current block, and the
    whole of a block claimed for a lane that has not installed it yet. Strongly consistent BatchGetItems: the
    events' shard counts (unless the caller read its events already), their queue items (unless the caller
    read them, as ``positions`` does with the departure nodes), then their lanes. Shard counts never shrink, so
    counts read a moment ago name every lane there is or was; a claim the lanes show installed is not pending.

    ``below[event_id]``: only the unused tickets below it are wanted, so lanes known to hold none there (see
    ``hints.lane``) are not read, and the blocks returned may leave out tickets at or above it. It needs the
    moment the queue items were asked for (``queues_asked_at``, when the caller read them)."""
    event_ids = sorted(set(event_ids))
    if not event_ids:
        return {}
    counts = dict(shard_counts or {})
    missing = [event_id for event_id in event_ids if event_id not in counts]
    if missing:
        counts.update({seats.pk.removeprefix(Event.PK_PREFIX): int(seats.seat_shards or 0) for seats in
                       EventSeats.batch_get([EventSeats.key_for(e) for e in missing], consistent_read=True)})
    if queues is None:
        queues_asked_at = time.monotonic()
        queues = {queue.event_id: queue for queue in WaitlistQueue.batch_get(
            [WaitlistQueue.key_for(e) for e in event_ids], consistent_read=True)}
    keys = []
    ends: dict[tuple[str, int], int | None] = {}
    for event_id in event_ids:
        for shard in range(ticket_lanes(counts.get(event_id, 0))):
            settled = None if below is None or event_id not in below or queues_asked_at is None else _settled_below(
                event_id, shard, queues.get(event_id), below[event_id], queues_asked_at)
            if settled is None:
                keys.append(SeatShard.key_for(event_id, shard))
            else:
                ends[(event_id, shard)] = None if settled == -1 else settled
    blocks: dict[str, list[tuple[int, int]]] = {event_id: [] for event_id in event_ids}
    for lane in SeatShard.batch_get(keys, consistent_read=True) if keys else ():
        hints.remember_lane(lane)
        blocks[lane.event_id].append(lane.unissued)
        ends[(lane.event_id, int(lane.shard))] = None if lane.lane_end is None else int(lane.lane_end)
    for event_id, queue in queues.items():
        for shard in queue.lanes_claimed():
            pending = queue.pending(shard, ends.get((event_id, shard)))
            if pending is not None and event_id in blocks:
                blocks[event_id].append(pending)
    return blocks


def unused_below(blocks: Iterable[tuple[int, int]], ticket: int) -> int:
    return sum(max(0, min(end, ticket) - start) for start, end in blocks)


def positions(*, tickets: Iterable[tuple[str, int]],
              shard_counts: dict[str, int] | None = None) -> dict[tuple[str, int], int]:
    """The position of each (event_id, ticket), 1 for the head: strongly consistent BatchGetItems of the counter
    nodes (a ticket needs at most ``LEVELS``; nodes shared by several tickets are read once, 100 per request)
    with the events' queue items and the shard counts not given, then of the lanes that may hold unused tickets
    below the tickets asked (one more request, none when this process's last images of the lanes rule it out:
    ``hints.lane``).

    Exact as of the read for a ticket still waiting. Tickets that have left get a meaningless number: callers
    ask only for entries they know to be waiting.
    """
    wanted = {(event_id, int(ticket)) for event_id, ticket in tickets}
    if not wanted:
        return {}
    keys = {WaitlistDepartures.key_for(event_id, level, block)
            for event_id, ticket in wanted for (level, block), _ in _reads(ticket)}
    event_ids = {event_id for event_id, _ in wanted}
    counts = dict(shard_counts or {})
    # The counter nodes, the queue items and the shard counts not known yet in the same BatchGetItem: different
    # models, one table.
    asked_at = time.monotonic()
    items = batch_get_models([*((WaitlistDepartures, key) for key in keys),
                              *((WaitlistQueue, WaitlistQueue.key_for(e)) for e in event_ids),
                              *((EventSeats, EventSeats.key_for(e)) for e in sorted(event_ids - set(counts)))])
    nodes = {(node.pk, node.sk): node for node in items if isinstance(node, WaitlistDepartures)}
    queues = {queue.event_id: queue for queue in items if isinstance(queue, WaitlistQueue)}
    counts.update({seats.pk.removeprefix(Event.PK_PREFIX): int(seats.seat_shards or 0)
                   for seats in items if isinstance(seats, EventSeats)})
    counts.update({event_id: 0 for event_id in event_ids - set(counts)})  # no such event (any more): no lane
    below = {event_id: max(ticket for e, ticket in wanted if e == event_id) for event_id in event_ids}
    blocks = lane_blocks(event_ids, shard_counts=counts, queues=queues, queues_asked_at=asked_at, below=below)
    found: dict[tuple[str, int], int] = {}
    for event_id, ticket in wanted:
        departed = 0
        for (level, block), digit in _reads(ticket):
            node = nodes.get(WaitlistDepartures.key_for(event_id, level, block))
            if node is not None:
                departed += node.digit_sum(digit)
        found[(event_id, ticket)] = ticket - departed - unused_below(blocks.get(event_id, ()), ticket)
    return found


def position(*, event_id: str, ticket: int) -> int:
    """The position of one waiting ticket (see ``positions``): one BatchGetItem of at most ``LEVELS`` nodes."""
    return positions(tickets=[(event_id, ticket)])[(event_id, int(ticket))]
