"""The waiting list's tickets: lanes that hand them out in blocks, and the queue item the blocks are claimed from.

**Lanes.** A burst of joiners must not queue on one item (an item takes one transaction at a time). Each seat shard
is also a *lane* of the waiting list: a joiner takes the next ticket of its home shard's lane, in a transaction
that touches that shard and no other item of the event. A lane hands out the tickets of a *block*. On a quiet
event every block has one ticket and is claimed by the join that uses it, so tickets are 1, 2, 3, ... in commit
order, exactly as with one counter. A lane that used up its block within ``BLOCK_SECONDS`` claims one
``BLOCK_GROWTH`` times as big (up to ``MAX_BLOCK``). A block older than ``BLOCK_SECONDS`` is not used any more:
the next joiner of that lane claims a fresh one and the old block's unused tickets are recorded as gone. Order
is ticket order, so two students who joined within one second of each other in different lanes of a burst may
be in either order (as they would be in commit order); nobody overtakes anyone who joined more than
``BLOCK_SECONDS`` earlier.

**Claims.** Blocks come from the event's queue item (``WaitlistQueue``: ``seq = seq + size``) by one conditional
UpdateItem, outside the join's transaction (``claim_block``): a transaction would hold the item for its whole
commit, so a burst of joiners whose lanes all need a block would queue on it; single writes hold nothing. The
claim is recorded per lane and conditioned on the lane's previous claim being installed, so a block claimed
by a joiner who then failed (or whose answer was lost) is *pending*: the lane's next joiner installs it, and
until then its tickets count as unused.

Where a ticket stands in the waiting list is counted in ``registrations.seating.positions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from pynamodb.exceptions import PynamoDBException, UpdateError

from registrations.errors import RegistrationError
from registrations.seating.models import SeatShard, WaitlistQueue
from tems.transactions import TRANSIENT, is_conditional_check_failed, response_code

# A lane keeps handing out its block for this long after claiming it; bounded overtaking, see the module doc.
BLOCK_SECONDS = 1.0
# The largest block a lane claims: a burst's lanes reach it within their first claims, then claim rarely; a bigger
# block only lengthens how long unused tickets linger.
MAX_BLOCK = 64
# How much bigger a lane's next block is when it used up the last within BLOCK_SECONDS. Every claim is a write
# of the one queue item all lanes claim from, and one partition takes at most 1,000 write units a second (a
# documented AWS limit): growing by 4 (1, 4, 16, 64) takes a lane to a burst's pace in half the claims that
# doubling needs, where doubling was measured to run the queue's partition over that limit. A bigger block only
# lets tickets of one second be handed out a little more out of order.
BLOCK_GROWTH = 4
# A lane's first block (or a busy lane's next) is the biggest when at least this many other lanes claimed one within
# BLOCK_SECONDS: the waiting list is forming in a burst over many lanes, every lane is starting at once, and each
# claim is a write of the one queue item, whose partition takes 1,000 write units a second. A quiet event's claims
# are seconds apart, so its blocks stay one ticket.
CROWD_LANES = 8


def block_seconds() -> float:
    return float(getattr(settings, "WAITLIST_BLOCK_SECONDS", BLOCK_SECONDS))


def max_block() -> int:
    return int(getattr(settings, "WAITLIST_MAX_BLOCK", MAX_BLOCK))


def block_usable(lane: SeatShard, now: datetime) -> bool:
    """Whether the lane's current block still has a ticket to hand out at ``now``."""
    start, end = lane.unissued
    return start < end and lane.lane_at is not None and now < lane.lane_at + timedelta(seconds=block_seconds())


def block_growth() -> int:
    return int(getattr(settings, "WAITLIST_BLOCK_GROWTH", BLOCK_GROWTH))


def next_block_size(lane: SeatShard, now: datetime, *, crowded: bool = False) -> int:
    """1 on a quiet lane; ``BLOCK_GROWTH`` times the last block if that one was used up within
    ``BLOCK_SECONDS``. For a joiner that met the crowd (a conflict, a busy queue: ``crowded``) the growth is
    squared and a lane's first block starts there: at the end of a burst every lane starts at once, and the
    ramp 1, 4, 16, 64 is four claims per lane on the one queue item (enough, over every lane, to fill its
    partition's write limit), where 16, 64 is two. Without a conflict (DynamoDB Local never sends one; a quiet
    event) the blocks are as before, so a quiet waiting list keeps its tickets in order."""
    start, end = lane.unissued
    growth = block_growth() ** 2 if crowded else block_growth()
    if crowded and (lane.lane_at is None or not lane.lane_size):
        return min(max_block(), growth)
    if lane.lane_at is None or not lane.lane_size or start < end:
        return 1
    if now < lane.lane_at + timedelta(seconds=block_seconds()):
        return min(max_block(), growth * int(lane.lane_size))
    return 1

class QueueBusy(Exception):
    """The queue item could not be written just now (``tems.transactions.TRANSIENT``)."""


@dataclass(frozen=True)
class Block:
    """A block of tickets [first, end) for one lane, from the queue item (``claim_block``)."""

    first: int
    end: int
    left: int  # the queue's ``left`` when the block was claimed or found: a join's answer subtracts it
    assumed_from: int  # the replaced block's ``lane_next`` as the claim counted its unused tickets gone
    claimed: bool  # True if this call claimed it, False if it was a pending claim of an earlier joiner
    # A pending claim older than BLOCK_SECONDS: handing out its tickets now would put the joiner ahead of everyone
    # who joined since, so it is installed as gone instead (every ticket unused) and a fresh block claimed.
    stale: bool = False


def claim_block(*, event_id: str, lane: SeatShard, size: int, now: datetime) -> Block:
    """Lane ``lane`` (as its image shows it) gets a new block of ``size`` tickets: ONE conditional UpdateItem of
    the event's queue item, no transaction (so it holds nothing, and a burst of claims is not a queue of
    transactions on one item).

    The claim is recorded per lane under the condition that the lane's last claim is the block the image shows
    installed, so a lane never has two claims in flight: the second claimant (or a botocore retry of this very
    request after a lost answer) fails it, reads the queue to learn why (a read that only explains a refusal)
    and gets the pending block back instead, to install it. The replaced block's unused tickets are counted in
    ``left`` by the claim; the install records them in the departure tree (and corrects ``left`` if the lane
    handed out more of them meanwhile).

    On a busy lane (its current block installed less than ``BLOCK_SECONDS`` ago and used up already), and for a
    lane's first block (at the end of a burst every lane's first joiners claim it at once), other
    joiners of the lane are claiming at the same moment, and all but one claim would fail its condition, each
    costing the queue item's write units (more, the more lanes it records) on the one partition every lane
    claims from.
    So there the queue is read first (one read unit): a block claimed by another joiner and not installed yet
    is taken from the read, and the write is sent only when there is none. The read saves a write its own
    condition would refuse; the write, when sent, still decides. When the read shows ``CROWD_LANES`` other lanes
    claiming within ``BLOCK_SECONDS``, the block is ``MAX_BLOCK``: one claim per lane for the burst.
    """
    k = str(int(lane.shard))
    start, end = lane.unissued
    last = WaitlistQueue.claim_last[k]
    queue = WaitlistQueue(*WaitlistQueue.key_for(event_id))
    if lane.lane_at is None or now < lane.lane_at + timedelta(seconds=block_seconds()):
        seen = queue_read(event_id)
        found = _pending_block(seen, lane, now)
        if found is not None:
            return found
        if len(_lanes_claiming(seen, now) - {k}) >= CROWD_LANES:
            size = max(size, max_block())
    for _ in range(3):
        try:
            queue.update(actions=[
                WaitlistQueue.seq.set((WaitlistQueue.seq | 0) + size),
                last.set((WaitlistQueue.seq | 0) + size),
                WaitlistQueue.claim_size[k].set(size),
                WaitlistQueue.claim_from[k].set(start),
                WaitlistQueue.left.set((WaitlistQueue.left | 0) + (end - start)),
                WaitlistQueue.claim_at[k].set(int(now.timestamp() * 1000)),
            ], condition=claim_condition(lane))
        except UpdateError as error:
            if response_code(error) in TRANSIENT:
                raise QueueBusy() from error
            if not is_conditional_check_failed(error):
                raise
            found = _pending_block(queue_read(event_id), lane, now)
            if found is not None:
                return found
            continue  # the pending claim was installed meanwhile: claim again
        last_ticket = int(queue.seq)
        return Block(first=last_ticket - size + 1, end=last_ticket + 1, left=int(queue.left),
                     assumed_from=start, claimed=True)
    raise RegistrationError("busy", "The waiting list of this event is moving fast; please try again.")


def _lanes_claiming(queue: WaitlistQueue, now: datetime) -> set[str]:
    """The lanes whose last claim on ``queue`` (as read) is less than BLOCK_SECONDS old."""
    since = (now.timestamp() - block_seconds()) * 1000
    claimed_at = queue.claim_at.as_dict() if queue.claim_at is not None else {}
    return {k for k, at in claimed_at.items() if int(at) >= since}


def _pending_block(queue: WaitlistQueue, lane: SeatShard, now: datetime) -> Block | None:
    """The block claimed for ``lane`` that the lane (as its image shows it) has not installed, from ``queue`` as
    read; None if there is none."""
    k = str(int(lane.shard))
    pending = queue.pending(int(lane.shard), lane.lane_end)
    if pending is None:
        return None
    claimed_at = int((queue.claim_at.as_dict() if queue.claim_at is not None else {}).get(k, 0))
    return Block(first=pending[0], end=pending[1], left=int(queue.left or 0),
                 assumed_from=int(queue.claim_from.as_dict()[k]), claimed=False,
                 stale=claimed_at + block_seconds() * 1000 < now.timestamp() * 1000)


def claim_condition(lane: SeatShard):
    """A lane claims a block only when its last claim is the block its image shows installed: one claim in
    flight per lane. (``claim_last`` exists on every queue item: an update never makes one for no event.)"""
    last = WaitlistQueue.claim_last[str(int(lane.shard))]
    installed = None if lane.lane_end is None else int(lane.lane_end) - 1
    recorded = last.does_not_exist() if installed is None else last == installed
    return WaitlistQueue.claim_last.exists() & recorded


def queue_read(event_id: str) -> WaitlistQueue:
    """The event's queue item (made with the event), strongly consistent. Raises RegistrationError('not_found')
    when there is none (no such event), QueueBusy when DynamoDB did not answer in time."""
    try:
        return WaitlistQueue.get(*WaitlistQueue.key_for(event_id), consistent_read=True)
    except WaitlistQueue.DoesNotExist:
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
    except PynamoDBException as error:
        if response_code(error) in TRANSIENT:
            raise QueueBusy() from error
        raise
