"""The router of one registration request: which shard it tries for a seat, and which lane it joins when none.

A registration is a loop of rounds (``services.create.registration_create``); each round sends ONE
transaction, a seat of one shard or a ticket of one lane, and the loop tells the ``Router`` how it ended. The
router learns only from what DynamoDB showed: the ALL_OLD image of a refused condition, or a read that replaces
a write it expects refused. It never decides anything: every write's own condition does, so a wrong guess
costs a round, never a wrong answer.

How a request moves (each arrow is a method that owns the state change):

1. ``next_shard``: the student's home shard first (``shards.first_shard``, as far as this process knows the
   event's shard count). A seat refused there (``refused``) means the shard is full; that shard is then the
   student's *lane* of the waiting list and its image tells the lane's copy of the gate and block. While the
   lane's gate is open the router looks for room elsewhere: shards an image showed with room, weighted by the
   seats they showed free, or up to ``SEAT_LOOKS`` reads of ``SEAT_LOOK`` shards (``look``).
2. ``close_gate``: no room found and the lane's gate open: the event's gate (``seating.gate``) is copied into
   the lane if closed, else every shard is read after the gate and the gate closed if none has room.
3. ``plan_join``: the lane's gate closed: the round takes the lane's next ticket (``lanes``), claiming a new
   block first when the lane needs one. A join that met another transaction moves to a lane of the
   ``LANE_LOOK`` read after the pause (``join_conflicted``).

State shared across requests lives in ``seating.hints`` and is only a hint. The clock is passed in, like the
loop's ``sleep``: a block's age is read from it, so a test moves time instead of waiting. One callback reaches the
services without this package importing them: ``heal`` finishes a promotion that a raise of capacity left pending.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pynamodb.exceptions import PynamoDBException

from registrations.errors import (
    closed_error,
    event_cancelled_error,
    not_found,
    not_open_error,
    window_closed_error,
)
from registrations.seating import lanes, shards
from registrations.seating.gate import CLOSED, RAISED, GateBusy, gate_close, gate_get, lane_copy
from registrations.seating.hints import hints
from registrations.seating.models import SeatShard
from tems.transactions import TRANSIENT, response_code

_random = random.SystemRandom()
# A student whose home shard is full, on an event whose waiting list is still open, reads up to SEAT_LOOKS times
# SEAT_LOOK other shards (none an image showed full, picked at random), each time one strongly consistent
# BatchGetItem, and tries a seat only where a read showed one free, before reading the gate and every shard. A
# read holds nothing and costs a read unit a shard; a seat attempt sent blind to a full shard is refused after
# holding it for a transaction's time and paying its six items' write units: at the end of a burst those blind
# attempts were most of the table's write units and most of the conflicts.
SEAT_LOOK = 8
SEAT_LOOKS = 2
# A join that met another transaction on its lane (most likely another joiner taking the lane's next ticket, so
# its image is stale) reads its lane and LANE_LOOK others after its pause, one BatchGetItem, and joins one whose
# gate is closed: the joiners of a burst spread over the lanes as seat attempts spread over the shards. Reads are
# not free either: at the end of a burst the looks for the last seats use most of the table's read capacity, and
# reading more lanes here had reads throttled.
LANE_LOOK = 2


@dataclass
class Join:
    """One round of joining the waiting list, planned from the lane's image (its gate closed).

    The round takes ticket ``ticket`` of lane ``lane`` in a transaction that touches that lane and no other item
    of the event. With ``block`` the lane installs a block claimed from the queue item first (``lanes``); a
    block claimed too long ago (``block.stale``) is installed as gone and the round hands out nothing
    (``registers`` False): the next one claims afresh.
    """

    lane: int
    image: SeatShard  # the lane as the plan saw it: the transaction's conditions pin it
    ticket: int
    now: datetime
    healed: bool  # the request finished a pending promotion: a lane still RAISED admits it
    block: lanes.Block | None = None
    position: int = 1

    @property
    def registers(self) -> bool:
        return not (self.block is not None and self.block.stale)

    def correction(self) -> int:
        """How much the queue's ``left`` is off once this install commits: the claim counted the replaced block's
        tickets from ``assumed_from`` as gone, the lane may have handed out some since; a stale block goes whole."""
        if self.block is None:
            return 0
        correction = self.block.assumed_from - self.image.unissued[0]
        return correction + (self.block.end - self.block.first if self.block.stale else 0)

    def left(self) -> int:
        """The queue's ``left`` once this install commits (a join's position subtracts it)."""
        return self.block.left + self.correction()


class Router:
    """Where one registration request tries next, learned from the images DynamoDB showed it (see the module doc).

    ``created_at`` is the registration's time (a shard's ``starts_at`` at or before it closes registration),
    ``clock`` the time a join plans against, ``heal(event_id)`` finishes a pending promotion. Raises
    RegistrationError 'not_found' for no such event and 'conflict' (registration_closed) once the event started.
    """

    def __init__(self, *, event_id: str, user_id: str, created_at: datetime, clock: Callable[[], datetime],
                 heal: Callable[[str], Any]) -> None:
        self.event_id, self.user_id, self.created_at = event_id, user_id, created_at
        self.clock, self.heal = clock, heal
        self.count = hints.shards(event_id)  # the event's shard count, as far as this request knows
        self.tried_home = False
        self.with_room: dict[int, int] = {}  # shards an image showed with room: the seats it showed free
        self.full: set[int] = set()  # shards whose image showed every seat taken
        self.busy: set[int] = set()  # shards whose seat attempt met a conflict (held by another transaction)
        self.elsewhere = False  # a seat attempt conflicted before any lane was known: try another shard
        self.looks = 0  # reads of other shards after the home shard was full (SEAT_LOOKS)
        self.closed_seen = False  # whether any shard's image showed the gate closed: no seat to look for
        self.lane: int | None = None  # the first shard that refused: the student's lane of the waiting list
        self.lane_image: SeatShard | None = None
        self.gate = False  # whether the lane's image says its gate is closed (every shard full)
        self.raised = False  # whether it says a raise waits to be handed to the people waiting
        self.healed = False  # whether this request already tried to finish a pending promotion
        self.crowded = False  # whether this request met the crowd (a conflict, a busy queue): bigger blocks
        # The block this request claimed or found pending, with the lane image (lane_next, lane_end) and the time
        # it was planned against: while the lane still shows that image the block is not installed, so the next
        # round installs it without claiming again.
        self.block: tuple[tuple[Any, Any], datetime, lanes.Block] | None = None
        self._home: tuple[int, int] | None = None  # (shard count, the first shard for it)
        # The first seat attempt's (shard, shard count) while it is in flight: counted for ``shards.first_shard``
        # when sent, so it stops counting if it does not commit.
        self._placing: tuple[int, int] | None = None
        # When the request whose images the router learns from next was sent, or a moment before: the gate's look
        # trusts a shard seen full only in an image newer than its read of the gate (``close_gate``).
        self.sent_at = 0.0

    # --- before the first round -----------------------------------------------------------------------------

    def start(self) -> tuple[str, str] | None:
        """The key of the lane to read instead of a seat attempt that this process expects refused (the event was
        full when it last looked, or the student's home shard was), or None: the first round tries the home
        shard. The caller reads it, in the one request that also reads what else would refuse that round, and
        hands its image to ``started``: whether to join or take a seat (a seat freed since shows as room)."""
        if hints.full(self.event_id) or hints.full_shard(self.event_id, self.home(), self.count):
            self.tried_home = True
            self.sending()
            return SeatShard.key_for(self.event_id, self.home())
        return None

    def sending(self) -> None:
        """The request whose images come next is about to be sent: a round's transaction, or a read."""
        self.sent_at = time.monotonic()

    def started(self, image: SeatShard | None) -> None:
        """Learn from the read of ``start``'s key: its image, or None when the item is not there."""
        if image is None:
            self.forget_event()
        else:
            self.refused(self.home(), image.serialize())

    def home(self) -> int:
        """The shard this student tries first (``shards.first_shard``), drawn once per shard count."""
        if self._home is None or self._home[0] != self.count:
            self._home = (self.count, shards.first_shard(self.event_id, self.user_id, self.count))
        return self._home[1]

    # --- seats ----------------------------------------------------------------------------------------------

    def next_shard(self) -> int | None:
        """The shard whose seat the next round tries, or None: join the waiting list (the lane's gate closed) or
        close the gate first (``close_gate``)."""
        if not self.tried_home:
            self.tried_home = True
            self._placing = (self.home(), self.count)
            hints.place(self.event_id, *self._placing)
            return self.home()
        if self.with_room:
            # Spread the newcomers sent away over the shards with room in proportion to the seats each image showed
            # free, so the shards fill together: a shard takes one transaction at a time, so the last seats go as
            # fast as the number of shards still holding them allows. Only where to try is random.
            candidates = [k for k in self.with_room if k not in self.busy] or list(self.with_room)
            return _random.choices(candidates, weights=[self.with_room[k] for k in candidates])[0]
        if self.elsewhere:
            # A seat attempt met another transaction on its shard: try one nobody is known to hold, and none an
            # image in this process showed full while others remain (as a look skips them).
            self.elsewhere = False
            free = [k for k in range(self.count) if k not in self.busy] or list(range(self.count))
            return _random.choice([k for k in free if k not in self.full and not hints.full_shard(
                self.event_id, k, self.count)] or free)
        if self.lane is None or self.lane >= self.count:
            # No image of a lane yet (the shards' number changed under us): look at the home shard again.
            self.lane, self.lane_image = None, None
            return self.home()
        while not self.gate and not self.closed_seen and self.looks < SEAT_LOOKS and len(self.full) < self.count:
            # The waiting list is open, so the event was not full when the image was taken: look at other shards,
            # not ones known full, before the gate's read of them all.
            self.looks += 1
            self.look()
            if self.with_room:
                return self.next_shard()  # a seat a read showed free
        return None

    def seat_taken(self, shard: int) -> None:
        """The round's seat in ``shard`` committed: counted for ``shards.first_shard``'s levelling (the first
        attempt's seat was counted when it was sent)."""
        if self._placing is not None and self._placing[0] == shard:
            self._placing = None
        else:
            hints.place(self.event_id, shard, self.count)

    def seat_missed(self, shard: int) -> None:
        """The round on ``shard`` did not commit (refused, held, answered by a claim or a key's record, or with no
        answer): the first attempt's count, made when it was sent, goes."""
        if self._placing is not None and self._placing[0] == shard:
            hints.place(self.event_id, *self._placing, seats=-1)
            self._placing = None

    def seat_conflicted(self, shard: int) -> None:
        """A seat attempt on ``shard`` met another transaction: the next one goes to another shard, so a burst
        spreads over the shards instead of queueing on a held one (with no image, a conflict says nothing of
        room, so a full event still learns it from the next refusal)."""
        self.busy.add(shard)
        self.crowded = True
        # A shard a read showed with room is held: most likely someone is taking that seat, so the image is
        # stale; the next round reads again rather than queueing on it.
        self.with_room.pop(shard, None)
        if len(self.busy) >= self.count:
            self.busy = {shard}
        if self.lane is None:
            self.elsewhere = True

    def look(self) -> None:
        """Read SEAT_LOOK shards no image showed full (one strongly consistent BatchGetItem): a read that holds
        nothing and decides nothing; the seat attempt it leads to is decided by its own condition."""
        # Shards this process saw full are left out too while others remain: their seats come back only when a
        # student cancels, and a read of a full shard is a read unit spent on nothing.
        unknown = [k for k in range(self.count) if k not in self.full]
        images = self.sample([k for k in unknown if not hints.full_shard(self.event_id, k, self.count)]
                             or unknown, SEAT_LOOK)
        if images is None:
            return  # throttled past botocore's retries: the gate's read of every shard comes next
        self.seen(images)

    def sample(self, candidates: list[int], size: int, *, also: int | None = None) -> list[SeatShard] | None:
        """Up to ``size`` of ``candidates``, picked at random, and shard ``also``, read strongly consistent in one
        BatchGetItem; None when the read was throttled past botocore's retries."""
        picked = _random.sample(candidates, min(size, len(candidates))) + ([] if also is None else [also])
        if not picked:
            return []
        self.sending()
        try:
            return list(SeatShard.batch_get([SeatShard.key_for(self.event_id, k) for k in picked],
                                            consistent_read=True))
        except PynamoDBException as error:
            if response_code(error) in TRANSIENT:
                return None
            raise

    def seen(self, images: list[SeatShard]) -> None:
        """Learn from shards read (not refused): which have room, which are full."""
        for image in images:
            self.refused(int(image.shard), image.serialize())

    def refused(self, shard: int, raw_item: dict[str, Any] | None) -> None:
        """Learn from the image of ``shard`` (a refused condition's ALL_OLD, or a read): its room, the event's
        shard count, and, for the lane, its gate and block. No image: the shard does not exist."""
        if not raw_item:
            self._explain_missing_shard()
        image = SeatShard.from_raw_data(raw_item)
        hints.remember_lane(image)  # a position read may then skip this lane
        if image.cancelled_at is not None:
            raise event_cancelled_error(image.cancelled_at)
        if image.draft and shard < shards.lane_count(int(image.shards)):
            raise not_found(self.event_id)  # waiting for approval: to a student there is no such event yet
        # A held shard's copies of the start and window are being replaced (``seating.holds``): they say nothing.
        # Past the lanes a draft mark is the same for a moment after a publication lifted it from the lanes.
        held = bool(image.held) or bool(image.draft)
        if not held:
            _raise_if_closed(image, self.created_at)
        if int(image.shards) != self.count:
            self.count = int(image.shards)
            hints.remember_shards(self.event_id, self.count)
            self.with_room = {k: room for k, room in self.with_room.items() if k < self.count}
            self.full = {k for k in self.full if k < self.count}
        if held:
            # No seat is taken there until the edit holding it is done: try the others meanwhile.
            self.with_room.pop(shard, None)
            self.full.discard(shard)
        elif int(image.taken) < int(image.capacity):
            self.with_room[shard] = int(image.capacity) - int(image.taken)
            self.full.discard(shard)
            hints.remember_full(self.event_id, False)  # a seat is free: the event is not full
        else:
            self.with_room.pop(shard, None)
            self.full.add(shard)
        hints.remember_shard(self.event_id, shard, self.count, full=shard in self.full, sent_at=self.sent_at)
        if image.gate_closed:
            # Any shard that copied the closed gate says every shard was full when it closed (a seat freed since
            # goes to the people waiting, or reopens the gate on every shard): room seen in older images is gone,
            # and a seat attempt there would only be refused after holding a lane that joiners need.
            self.with_room.clear()
            self.closed_seen = True
        if self.lane is None:
            # The first shard that refused is the student's lane of the waiting list.
            self.lane = shards.lane_of(shard, self.count)
        if shard == self.lane and held and shard >= shards.lane_count(self.count):
            # A lane past the inner ones that an edit holds (or a publication has not unmarked yet) takes no join
            # until its copies are written: join an inner lane meanwhile.
            self.to_inner_lane()
        elif shard == self.lane:
            # Only the lane's own copy of the gate counts: another lane may have copied a closed gate before it.
            self.lane_image = image
            self.gate = image.gate_closed
            self.raised = int(image.gate or 0) == RAISED
            if self.gate:
                # A lane closed means the event's gate is (an open lane may just not have copied it yet: only
                # the gate's own read forgets the hint).
                hints.remember_full(self.event_id, True)

    def _explain_missing_shard(self) -> None:
        """A shard read or refused without an image does not exist: its shards are born with the event and never
        removed while it exists, so there is no such event (or it is being deleted: a lab scratch event)."""
        raise not_found(self.event_id)

    # --- the gate -------------------------------------------------------------------------------------------

    def close_gate(self) -> None:
        """The lane's gate is open and the seats tried were full: look at the event's gate.

        Closed: copy it into the lane (one UpdateItem of the lane, ``lane_copy``). Open: read every shard after
        the gate (one strongly consistent BatchGetItem: a read that holds nothing, so seat attempts do not stop
        it, and decides nothing), but those this process saw full in an image newer than a read of the gate open
        at the same epoch; a shard with room is the next round's try, and with none the gate closes by one write
        under the epoch read (``gate_close``), which fails if any seat was freed since that read.
        Raises GateBusy when DynamoDB did not take a read or a write just then (pause, and look again).
        """
        gate = gate_get(event_id=self.event_id)
        read_at = time.monotonic()
        if gate is None:
            raise not_found(self.event_id)  # the gate is born with the event
        if not gate.closed:
            hints.remember_full(self.event_id, False)
            self.closed_seen = False  # reopened since that image: every shard is open again
            count = int(gate.shards)
            # Every seat freed for newcomers moves the epoch, so a shard seen full since the gate was open at this
            # epoch is full still if the epoch holds when the gate closes. At the end of a burst every latecomer
            # comes here at once, and a read of every shard each spent the table's read capacity.
            since = hints.open_gate_since(self.event_id, epoch=int(gate.epoch), count=count, returned_at=read_at)
            known = hints.full_since(self.event_id, count, since)
            unknown = [k for k in range(count) if k not in known]
            read = self.sample(unknown, len(unknown))
            if read is None:
                # Throttled past botocore's retries (the table's read capacity, at the end of a burst): a pause
                # and another look, as when the gate itself is busy.
                raise GateBusy()
            if len(read) < len(unknown):
                self._explain_missing_shard()
            self.seen(read)
            if count == self.count:
                self.full |= known
                self.with_room = {k: room for k, room in self.with_room.items() if k not in known}
            if any((image.held or image.draft) and int(image.taken) < int(image.capacity) for image in read):
                # A held shard's free seats come back when its edit is done: the gate stays open, look again.
                raise GateBusy()
            if self.with_room or self.gate or not gate_close(gate=gate):
                return  # a seat to try, the lane closed meanwhile, or the gate moved: the next round says
        hints.remember_full(self.event_id, True)
        self.raised = int(gate.state) == RAISED
        if self.heal_once():
            return
        if self.lane is None:
            return
        copied = lane_copy(gate=gate, lane=self.lane, inner=self.lane < shards.lane_count(self.count))
        if copied is not None and self.lane_image is not None:
            self.gate, self.lane_image.gate = True, copied
            return
        self.reread_lane()  # copied by someone else, or the gate reopened: the lane's image says
        image = self.lane_image
        if not self.gate and image is not None and int(image.opened or 0) > int(gate.opened):
            # A lane past the inner ones that a reopening opened before the gate's own transaction (which then
            # did not commit, or has not yet): it closes again only at the next reopening. Join an inner lane.
            self.to_inner_lane()
            self.reread_lane()

    def to_inner_lane(self) -> None:
        """Make a random inner lane (one the gate's own reopening writes) the student's lane, its image unknown."""
        self.lane, self.lane_image, self.gate = _random.randrange(shards.lane_count(self.count)), None, False

    def heal_once(self) -> bool:
        """A raise not handed out yet (its promotion did not finish, the gate says so): finish it before this
        newcomer, who must not overtake the people waiting, and look again. Once per request; True if it did."""
        if not self.raised or self.healed:
            return False
        self.healed = True
        self.heal(self.event_id)
        self.forget_event()
        return True

    def reread_lane(self) -> None:
        """Read the lane (the home shard if none yet): a read that explains a refused write, or replaces a seat
        attempt the route expects refused; the next write's conditions decide."""
        shard = self.lane if self.lane is not None else self.home()
        try:
            image = SeatShard.get(*SeatShard.key_for(self.event_id, shard), consistent_read=True)
        except SeatShard.DoesNotExist:
            self.forget_event()
            return
        except PynamoDBException as error:
            if response_code(error) in TRANSIENT:
                return  # throttled past botocore's retries: the next round's conditions will say
            raise
        self.refused(shard, image.serialize())

    def forget_event(self) -> None:
        """Forget what this request saw of the event's shards: the next round starts from the home shard."""
        self.tried_home, self.with_room, self.full, self.closed_seen = False, {}, set(), False
        self.lane, self.lane_image = None, None

    # --- the waiting list -----------------------------------------------------------------------------------

    def plan_join(self) -> Join:
        """The next ticket of the lane (its gate closed): the rest of the lane's block if it is still usable, else
        a block claimed from the queue item by one single write (``lanes.claim_block``), or the one this
        request claimed before and has not seen installed. Raises ``lanes.QueueBusy``."""
        image, now = self.lane_image, self.clock()
        if lanes.block_usable(image, now):
            ticket = int(image.lane_next)
            return Join(lane=self.lane, image=image, ticket=ticket, now=now, healed=self.healed,
                        position=max(ticket - int(image.lane_left or 0), 1))
        seen = (image.lane_next, image.lane_end)
        if self.block is not None and self.block[0] == seen and now < self.block[1] + timedelta(
                seconds=lanes.block_seconds()):
            block = self.block[2]
        else:
            try:
                block = lanes.claim_block(
                    event_id=self.event_id, lane=image,
                    size=lanes.next_block_size(image, now, crowded=self.crowded), now=now)
            except lanes.QueueBusy:
                self.crowded = True
                raise
            self.block = (seen, now, block)
        join = Join(lane=self.lane, image=image, ticket=block.first, now=now, healed=self.healed, block=block)
        join.position = max(block.first - join.left(), 1)
        return join

    def join_refused(self, join: Join, raw_item: dict[str, Any] | None) -> bool:
        """The join's condition failed: learn the lane's image (``raw_item``, when its own condition failed).
        True when a pending promotion was finished instead, so the next round looks again without a pause."""
        if raw_item is not None:
            self.refused(join.lane, raw_item)
        return self.heal_once()

    def join_conflicted(self, join: Join) -> None:
        """Another transaction held the lane, most likely another joiner taking its next ticket, so its image is
        stale: unless a block is to be installed there, move to a lane read now (after the caller's pause, not
        before it: a lane read before the pause was stale again by the time the join was sent)."""
        self.crowded = True
        if join.block is None:
            self.move_lane()

    def move_lane(self) -> None:
        """Join in the lane, or one of LANE_LOOK others, whose gate is closed (one read of them all, which decides
        nothing: the join's own conditions do), preferring one whose block still has a ticket, so the join claims
        no block; keep the old image if none is closed. Any lane will do: tickets come from one sequence."""
        others = [k for k in range(shards.ticket_lanes(self.count)) if k != self.lane]
        images = self.sample(others, LANE_LOOK, also=self.lane)
        if images is None:
            return
        closed = [image for image in images if int(image.gate or 0) == CLOSED and int(image.shards) == self.count]
        if not closed:
            return
        now = self.clock()
        image = _random.choice([i for i in closed if lanes.block_usable(i, now)] or closed)
        self.lane, self.lane_image, self.block = int(image.shard), image, None

    def join_landed(self, join: Join) -> None:
        """The round committed without registering (a stale block retired): what it wrote is known exactly (its
        conditions pinned the state before), so the lane's image follows without a read."""
        if join.block is not None and join.block.stale:
            image = self.lane_image
            image.lane_next, image.lane_end = join.block.end, join.block.end
            image.lane_at, image.lane_size, image.lane_left = join.now, join.block.end - join.block.first, join.left()


def _raise_if_closed(image: SeatShard, created_at: datetime) -> None:
    """The shard's copies say registration is not open at ``created_at``: the refusal, in the student's words."""
    if image.starts_at is not None and image.starts_at <= created_at:
        raise closed_error(image.starts_at)
    if image.opens_at is not None and image.opens_at > created_at:
        raise not_open_error(image.opens_at)
    if image.closes_at is not None and image.closes_at <= created_at:
        raise window_closed_error(image.closes_at)
