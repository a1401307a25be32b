"""The waiting list's tickets (lanes and blocks) and exact positions at a cost that does not grow with the queue.

**Lanes.** A burst of joiners must not queue on one item (one item takes ~100 transactions/s). Each seat shard
is also a *lane* of the waiting list: a joiner takes the next ticket of its home shard's lane, in a transaction
that touches that shard and no other item of the event. A lane hands out the tickets of a *block* it claimed from
the event's ``waitlist_seq`` (``seq = c`` -> ``c + size``, under ``seq = c``). On a quiet event every block has
one ticket and is claimed by the join that uses it, so tickets are 1, 2, 3, ... in commit order, exactly as with
one counter. A lane that used up its block within ``BLOCK_SECONDS`` claims one twice as big (up to
``MAX_BLOCK``), so under a burst the event's item is written once per block instead of once per joiner. A block
older than ``BLOCK_SECONDS`` is not used any more: the next joiner of that lane claims a fresh one and records
the old block's unused tickets as gone. Order is ticket order, so two students who joined within one second of
each other in different lanes of a burst may be in either order (as they would be in commit order); nobody
overtakes anyone who joined more than ``BLOCK_SECONDS`` earlier.

**Positions.** Every ticket below ``t`` was handed out (to an entry still waiting, or one that left), or is
still unused in a lane's current block, or was recorded as gone with an old block. So::

    position(t) = t - departed(tickets < t) - unused(tickets < t in the lanes' current blocks)

``departed`` is kept in a tree of counters (``WaitlistDepartures``), base ``FANOUT``, ``LEVELS`` deep. A
departure of ticket ``s`` adds 1 to one digit of one node per level, in the very transaction that deletes the
entry (a cancellation's or a promotion's), so the counters can never disagree with the entries. Reading
``departed(tickets < t)`` needs, per level, the digits below ``t``'s digit in ``t``'s own node: at most one node
per non-zero digit of ``t`` (position 10,000 reads one node, 9,999 reads two), fetched with one BatchGetItem.

Joining writes no counter at all: a burst of joiners touches nothing this module adds. Departures already
write the event's seat counters in their transactions; their counter nodes are written by no one else. See
docs/registrations.md ("Waitlist positions") for the designs rejected and the cost on a hot event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from django.conf import settings

from registrations.errors import RegistrationError
from registrations.models import Event, EventSeats, SeatShard, WaitlistDepartures, WaitlistEntry
from tems.transactions import LabelledTransaction, TransactionCancelled

# A lane keeps handing out its block for this long after claiming it; bounded overtaking, see the module doc.
BLOCK_SECONDS = 1.0
# 40 lanes of 64-ticket blocks: a burst of 1,200 joiners/s claims ~20-40 blocks/s on the event's item, well under
# the ~100 transactions/s one item takes; a bigger block only lengthens how long unused tickets linger.
MAX_BLOCK = 64


def block_seconds() -> float:
    return float(getattr(settings, "WAITLIST_BLOCK_SECONDS", BLOCK_SECONDS))


def max_block() -> int:
    return int(getattr(settings, "WAITLIST_MAX_BLOCK", MAX_BLOCK))


def block_usable(lane: SeatShard, now: datetime) -> bool:
    """Whether the lane's current block still has a ticket to hand out at ``now``."""
    start, end = lane.unissued
    return start < end and lane.lane_at is not None and now < lane.lane_at + timedelta(seconds=block_seconds())


def next_block_size(lane: SeatShard, now: datetime) -> int:
    """1 on a quiet lane; twice the last block if that one was used up within ``BLOCK_SECONDS``."""
    start, end = lane.unissued
    if lane.lane_at is None or not lane.lane_size or start < end:
        return 1
    if now < lane.lane_at + timedelta(seconds=block_seconds()):
        return min(max_block(), 2 * int(lane.lane_size))
    return 1

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


def lane_blocks(event_ids: Iterable[str], *,
                shard_counts: dict[str, int] | None = None) -> dict[str, list[tuple[int, int]]]:
    """Each event's lanes' unused block tickets, [start, end) per lane: two strongly consistent BatchGetItems
    (the events' shard counts, unless the caller read its events already, then their shards). Shard counts
    never shrink, so counts read a moment ago name every lane there is or was."""
    event_ids = sorted(set(event_ids))
    if not event_ids:
        return {}
    counts = dict(shard_counts or {})
    missing = [event_id for event_id in event_ids if event_id not in counts]
    if missing:
        counts.update({seats.pk.removeprefix(Event.PK_PREFIX): int(seats.seat_shards or 0) for seats in
                       EventSeats.batch_get([EventSeats.key_for(e) for e in missing], consistent_read=True)})
    keys = [SeatShard.key_for(event_id, shard) for event_id in event_ids for shard in range(counts.get(event_id, 0))]
    blocks: dict[str, list[tuple[int, int]]] = {event_id: [] for event_id in event_ids}
    for lane in SeatShard.batch_get(keys, consistent_read=True):
        blocks[lane.event_id].append(lane.unissued)
    return blocks


def unused_below(blocks: Iterable[tuple[int, int]], ticket: int) -> int:
    return sum(max(0, min(end, ticket) - start) for start, end in blocks)


def positions(*, tickets: Iterable[tuple[str, int]],
              shard_counts: dict[str, int] | None = None) -> dict[tuple[str, int], int]:
    """The position of each (event_id, ticket), 1 for the head: strongly consistent BatchGetItems of the counter
    nodes (a ticket needs at most ``LEVELS``; nodes shared by several tickets are read once, 100 per request)
    and of the events' lanes (two requests, see ``lane_blocks``).

    Exact as of the read for a ticket still waiting. Tickets that have left get a meaningless number: callers
    ask only for entries they know to be waiting.
    """
    wanted = {(event_id, int(ticket)) for event_id, ticket in tickets}
    if not wanted:
        return {}
    keys = {WaitlistDepartures.key_for(event_id, level, block)
            for event_id, ticket in wanted for (level, block), _ in _reads(ticket)}
    nodes = {(node.pk, node.sk): node for node in WaitlistDepartures.batch_get(sorted(keys), consistent_read=True)}
    blocks = lane_blocks((event_id for event_id, _ in wanted), shard_counts=shard_counts)
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


# --- existing events: the departures made before the tree existed ------------------------------------------

# Nodes per transaction next to the condition checks on the event and its lanes (DynamoDB allows 100 items).
REBUILD_ITEMS = 100
REBUILD_ROUNDS = 20


def rebuild_departures(*, event_id: str) -> int:
    """Set the event's departure nodes to what its entries say (tickets neither waiting nor unused in a lane's
    current block are the departures).

    For events whose waiting list predates the tree. Each chunk of nodes is written with absolute values in one
    transaction that also checks the event's ``waitlist_seq`` and ``waitlist_count`` and every lane's block and
    ``waiting`` are still what was read with the entries, so a join or a departure in between makes it read
    again instead of writing a stale count (a departure that lands between two chunks ADDs to a node already
    exact, and the next chunk rereads). Returns the number of nodes written. Raises RegistrationError('busy')
    if the list never held still.
    """
    for _ in range(REBUILD_ROUNDS):
        try:
            seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return 0
        seq, count = int(seats.waitlist_seq or 0), int(seats.waitlist_count or 0)
        lanes = [] if not seats.seat_shards else sorted(
            SeatShard.batch_get([SeatShard.key_for(event_id, k) for k in range(int(seats.seat_shards))],
                                consistent_read=True), key=lambda lane: int(lane.shard))
        partitions = [WaitlistEntry.lane_pk_for(event_id, None),
                      *(WaitlistEntry.lane_pk_for(event_id, int(lane.shard)) for lane in lanes)]
        live = {int(entry.ticket) for pk in partitions for entry in WaitlistEntry.query(
            pk, WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX), consistent_read=True)}
        unused = {ticket for lane in lanes for ticket in range(*lane.unissued)}
        nodes: dict[Node, dict[int, int]] = {}
        gone = (t for t in range(1, seq + 1) if t not in live and t not in unused)
        for (level, block, digit), amount in departure_nodes(gone).items():
            nodes.setdefault((level, block), {})[digit] = amount
        per_chunk = REBUILD_ITEMS - 1 - len(lanes)
        chunks = [sorted(nodes.items())[start:start + per_chunk] for start in range(0, len(nodes), per_chunk)]
        try:
            for chunk in chunks:
                transaction = LabelledTransaction()
                unchanged = (EventSeats.waitlist_count == count) & (
                    EventSeats.waitlist_seq == seq if seats.waitlist_seq is not None
                    else EventSeats.waitlist_seq.does_not_exist())
                transaction.condition_check("event", EventSeats, *EventSeats.key_for(event_id), condition=unchanged)
                for lane in lanes:
                    transaction.condition_check(f"lane_{lane.shard}", SeatShard, *SeatShard.key_for(
                        event_id, int(lane.shard)), condition=_same(SeatShard.lane_next, lane.lane_next)
                        & _same(SeatShard.waiting, lane.waiting))
                for (level, block), digits in chunk:
                    node = WaitlistDepartures(*WaitlistDepartures.key_for(event_id, level, block))
                    transaction.update(f"{LABEL_PREFIX}_{level}_{block:010d}", node, actions=[
                        *(getattr(WaitlistDepartures, WaitlistDepartures.digit_name(digit)).set(amount)
                          for digit, amount in sorted(digits.items())),
                        WaitlistDepartures.entity.set("WaitlistDepartures"),
                    ])
                transaction.commit()
        except TransactionCancelled:
            continue  # the list moved: read it again
        return len(nodes)
    raise RegistrationError("busy", f"The waiting list of event {event_id} kept changing; run the backfill again.")


def _same(attribute, value):
    return attribute.does_not_exist() if value is None else attribute == value
