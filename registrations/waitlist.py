"""Exact waitlist positions at a cost that grows with the number of digits of a ticket, not with the queue.

Tickets are handed out 1, 2, 3, ... (``Event.waitlist_seq``), one entry per ticket, so the entries ahead of
ticket ``t`` are the ``t - 1`` tickets before it minus those that have left (cancelled or promoted)::

    position(t) = t - departed(tickets < t)

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

from registrations.errors import RegistrationError
from registrations.models import Event, EventSeats, WaitlistDepartures, WaitlistEntry
from tems.transactions import LabelledTransaction, TransactionCancelled

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


def positions(*, tickets: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The position of each (event_id, ticket), 1 for the head: one strongly consistent BatchGetItem per 100
    counter nodes (a ticket needs at most ``LEVELS``; nodes shared by several tickets are read once).

    Exact as of the read for a ticket still waiting. Tickets that have left get a meaningless number: callers
    ask only for entries they know to be waiting.
    """
    wanted = {(event_id, int(ticket)) for event_id, ticket in tickets}
    keys = {WaitlistDepartures.key_for(event_id, level, block)
            for event_id, ticket in wanted for (level, block), _ in _reads(ticket)}
    nodes = {(node.pk, node.sk): node for node in WaitlistDepartures.batch_get(sorted(keys), consistent_read=True)}
    found: dict[tuple[str, int], int] = {}
    for event_id, ticket in wanted:
        departed = 0
        for (level, block), digit in _reads(ticket):
            node = nodes.get(WaitlistDepartures.key_for(event_id, level, block))
            if node is not None:
                departed += node.digit_sum(digit)
        found[(event_id, ticket)] = ticket - departed
    return found


def position(*, event_id: str, ticket: int) -> int:
    """The position of one waiting ticket (see ``positions``): one BatchGetItem of at most ``LEVELS`` nodes."""
    return positions(tickets=[(event_id, ticket)])[(event_id, int(ticket))]


# --- existing events: the departures made before the tree existed ------------------------------------------

# Nodes per transaction next to the condition check on the event (DynamoDB allows 100 items).
REBUILD_CHUNK = 99
REBUILD_ROUNDS = 20


def rebuild_departures(*, event_id: str) -> int:
    """Set the event's departure nodes to what its entries say (the missing tickets are the departures).

    For events whose waiting list predates the tree. Each chunk of nodes is written with absolute values in one
    transaction that also checks the event's ``waitlist_seq`` and ``waitlist_count`` are still what was read
    with the entries, so a join or a departure in between makes it read again instead of writing a stale count
    (a departure that lands between two chunks ADDs to a node already exact, and the next chunk rereads).
    Returns the number of nodes written. Raises RegistrationError('busy') if the list never held still.
    """
    for _ in range(REBUILD_ROUNDS):
        try:
            seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return 0
        seq, count = int(seats.waitlist_seq or 0), int(seats.waitlist_count or 0)
        live = {int(entry.ticket) for entry in WaitlistEntry.query(
            Event.pk_for(event_id), WaitlistEntry.sk.startswith(WaitlistEntry.SK_PREFIX), consistent_read=True)}
        nodes: dict[Node, dict[int, int]] = {}
        for (level, block, digit), amount in departure_nodes(t for t in range(1, seq + 1) if t not in live).items():
            nodes.setdefault((level, block), {})[digit] = amount
        chunks = [sorted(nodes.items())[start:start + REBUILD_CHUNK] for start in range(0, len(nodes), REBUILD_CHUNK)]
        try:
            for chunk in chunks:
                transaction = LabelledTransaction()
                unchanged = (EventSeats.waitlist_count == count) & (
                    EventSeats.waitlist_seq == seq if seats.waitlist_seq is not None
                    else EventSeats.waitlist_seq.does_not_exist())
                transaction.condition_check("event", EventSeats, *EventSeats.key_for(event_id), condition=unchanged)
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
