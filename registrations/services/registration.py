"""A student's registration: the claim, the seat or the waiting-list ticket, and the record, as one transaction."""

from __future__ import annotations

import json
import logging
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pynamodb.exceptions import PynamoDBException, TransactWriteError

from registrations import attendees, selectors
from registrations import seats as seats_module
from registrations import waitlist as waitlist_module
from registrations.errors import RegistrationError
from registrations.models import (
    CONFIRMED,
    CURRENT_LAYOUT,
    WAITLISTED,
    EventSeats,
    Registration,
    RegistrationClaim,
    SeatShard,
    WaitlistEntry,
    WaitlistQueue,
)
from registrations.services.common import (
    CLAIM,
    CROWDED,
    EVENT_REGISTRATION,
    IDEMPOTENCY,
    LANE,
    MAX_ROUNDS,
    OUTBOX,
    QUEUE,
    SEAT,
    USER_REGISTRATION,
    WAITLIST_ENTRY,
    _busy,
    _replay_raw,
    conflict_backoff,
    remember_answer,
    ticket_pause,
)
from registrations.services.gate import CLOSED, RAISED, GateBusy, gate_close, lane_copy
from registrations.services.layout import upgrade_if_legacy
from registrations.services.shards import gate_of, shard_event
from registrations.services.waitlist import waitlist_promote
from tems.clock import utcnow
from tems.idempotency import StoredResponse, completed_record, record_is_absent_or_expired
from tems.outbox import outbox_message
from tems.transactions import (
    CONDITIONAL_CHECK_FAILED,
    TRANSIENT,
    LabelledTransaction,
    TransactionCancelled,
    response_code,
)

logger = logging.getLogger(__name__)
_random = random.SystemRandom()
# A student whose home shard is full, on an event whose waiting list is still open, reads up to SEAT_LOOKS times
# SEAT_LOOK other shards (none an image showed full, picked at random), each time one strongly consistent
# BatchGetItem, and tries a seat only where a read showed one free, before reading the gate and every shard. A
# read holds nothing and costs a read unit a shard; a seat attempt sent blind to a full shard is refused after
# holding it for a transaction's time and paying its six items' write units (2 each): at the end of a burst
# those blind attempts were most of the table's write units and most of the conflicts (issue 13).
SEAT_LOOK = 8
SEAT_LOOKS = 2
# A join that met another transaction on its lane (most likely another joiner taking the lane's next ticket, so
# its image is stale and its next try would be refused after holding the lane) pauses, then reads its lane and
# LANE_LOOK others, one strongly consistent BatchGetItem, and joins one whose gate is closed: the joiners of a
# burst spread over the lanes as seat attempts spread over the shards, instead of queueing on one item (issue
# 13). Reads are not free either: at the end of a burst the looks for the last seats use most of the table's
# read ceiling (40,000 RCU/s), and reading 4 lanes here had reads throttled.
LANE_LOOK = 2

# --- registrations ------------------------------------------------------------------------------------------
#
# A first registration is ONE TransactWriteItems: claim + both registration items + the seat counter (with the
# seat condition) + the idempotency record, already COMPLETED with the response it will return + an outbox
# message. Whoever loses a race learns why from the cancellation reasons, read by label:
#   idempotency  the same key was used before: replay its stored response (ALL_OLD, no extra read)
#   claim        the student is already registered (another tap, another key): answer with that registration
#   event        no free seat (or the event is missing): join the waiting list, in a transaction of its own
#   conflict     another transaction held an item: try again after a jittered pause, bounded, then "busy"



@dataclass(frozen=True)
class RegistrationOutcome:
    """What ``registration_create`` answered: the response to send and how it came about."""

    response: StoredResponse
    kind: str  # "created" | "already_registered" | "replayed"

    @property
    def replayed(self) -> bool:
        return self.kind == "replayed"

    @property
    def data(self) -> dict[str, Any]:
        return json.loads(self.response.body)


@dataclass(frozen=True)
class _NewRegistration:
    """Everything about the registration being attempted, fixed before the first request is sent."""

    registration_id: str
    event_id: str
    user_id: str
    created_at: datetime
    idempotency_key: str
    fingerprint: str
    user_name: str | None = None


def new_registration_id() -> str:
    # 32 hex digits as before, but the first 12 are the creation time in milliseconds: the student's list is
    # then in key order newest first, so it can be paged by one Query instead of read whole and sorted.
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_hex(10)}"


def registration_create(*, event_id: str, user_id: str, idempotency_key: str, fingerprint: str,
                        user_name: str | None = None, now: datetime | None = None,
                        sleep: Callable[[float], None] = time.sleep) -> RegistrationOutcome:
    """Register ``user_id`` for ``event_id`` exactly once per student and once per idempotency key.

    ``user_id`` is the student's immutable key (``tems.identity.user_key``); ``user_name`` is only shown.

    One request when the seat is free and the key is new. Returns the outcome whose response is the 201 of a
    new registration (confirmed, or waitlisted with its position when the event is full), the 200 of the
    student's existing registration, or the replay of the key's first response. Raises RegistrationError:
    'not_found' (no such event), 'unprocessable' (the key was used for another request), 'busy' (contention
    did not clear in time; nothing was written).
    """
    attempt = _NewRegistration(
        registration_id=new_registration_id(), event_id=event_id, user_id=user_id,
        created_at=now or utcnow(), idempotency_key=idempotency_key, fingerprint=fingerprint, user_name=user_name,
    )
    route = _Route(event_id=event_id, user_id=user_id)
    conflicts = conflict_backoff(sleep)
    if seats_module.known_full(event_id):
        # The event was full when this process last looked: read the home shard's lane (one GetItem) rather than
        # send a seat attempt that would most likely be refused; its image says whether to join or take a seat.
        route.tried_home = True
        route.reread_lane(attempt)
    elif seats_module.known_full_shard(event_id, route.home(), route.count):
        # Its home shard was full when this process last saw it: read it (one GetItem) instead of a seat attempt
        # it would refuse; the image makes it the lane and says whether a seat was freed there since.
        route.tried_home = True
        route.reread_lane(attempt)
    for _ in range(MAX_ROUNDS):
        shard = route.next_shard(attempt)
        if shard is None and not route.gate:
            # Every seat tried was full and the lane's gate is open: close the event's gate, or learn where a
            # seat is free (services/gate.py). Reads and single writes; nothing of the student's yet.
            try:
                route.close_gate(attempt)
            except GateBusy:
                conflicts.pause()
            continue
        joining = shard is None
        try:
            join: _Join | None = _Join.plan(attempt, route) if joining else None
        except waitlist_module.QueueBusy:
            # The queue item is held by a departure's transaction, or throttled. Moving to another lane instead
            # was measured and dropped: at the default quota no lane has a ticket left when the waiting list
            # starts, so the move only added reads and claims on throttled partitions (docs/registrations.md).
            route.crowded = True
            conflicts.pause()
            continue
        transaction, response = (join.transaction() if join is not None
                                 else _confirm_transaction(attempt, shard))
        try:
            transaction.commit()
        except TransactWriteError as error:
            if response_code(error) not in TRANSIENT:
                raise
            # An error botocore gave up retrying (its retry quota runs out when many requests fail at once), or
            # an answer lost for good: every item of every round is conditioned, so trying again is safe (an
            # applied round is found by its conditions: the record replays, the claim answers, the gate is shut).
            conflicts.pause()
            continue
        except TransactionCancelled as cancelled:
            if cancelled.failed(IDEMPOTENCY):
                return _replay(cancelled.reasons[IDEMPOTENCY].raw_item, attempt)
            if cancelled.failed(CLAIM):
                claim = RegistrationClaim.from_raw_data(cancelled.reasons[CLAIM].raw_item)
                return _already_registered(claim, attempt, sleep=sleep)
            if not joining and cancelled.failed(SEAT):
                route.refused(shard, cancelled.reasons[SEAT].raw_item, attempt)
                continue
            if joining and cancelled.codes & {CONDITIONAL_CHECK_FAILED}:
                # The lane's image says what its block and its gate are now.
                if cancelled.failed(LANE):
                    route.refused(join.lane, cancelled.reasons[LANE].raw_item, attempt)
                if route.raised and not route.healed:
                    # A raise not handed out yet (its promotion did not finish, the gate says so): finish it
                    # before this newcomer, who must not overtake the people waiting, then look again.
                    route.healed = True
                    _promote_best_effort(event_id)
                    route.forget_event()
                    continue
                ticket_pause(sleep)
                continue
            if cancelled.is_conflict:
                # For a join: another transaction held the lane, most likely another joiner taking its next
                # ticket, so the lane's image is stale. Read after the pause, not before it, or the next try is
                # refused after holding the lane (at K = 1 most refused joins were a move planned from a read made
                # before a pause of up to 250 ms, on lanes taking ~30 joins a second).
                conflicts.pause()
                route.crowded = True
                if not joining:
                    route.conflicted(shard)
                elif join.block is None:
                    route.move_lane()
                continue
            raise
        if join is not None and not join.registers:
            # A stale block was retired: the next round takes a ticket.
            join.landed()
            continue
        if not joining:
            seats_module.took_seat(event_id, shard, route.count)
        return RegistrationOutcome(response, "created")
    raise _busy("The waiting list for this event is moving fast; please try again in a moment.")


class _Route:
    """Where a registration looks for a seat, learned only from refused conditions' ALL_OLD images.

    First the student's home shard (a hash of the user into the event's shards, as far as this process knows
    their number). A refused seat means that shard is full; it is also the student's *lane* of the waiting list
    (registrations.waitlist), and its image says whether the lane's copy of the event's gate is closed
    (``gate``) and what the lane's block is. With the lane's gate closed the join touches that lane only. With it
    open, ``close_gate`` looks at the event's gate (services/gate.py): it copies a closed gate into the lane, or
    reads every shard and closes the gate if none has room, or sends the next round to a shard with room.
    """

    def __init__(self, *, event_id: str, user_id: str) -> None:
        self.event_id, self.user_id = event_id, user_id
        self.count = seats_module.known_shards(event_id)
        self.tried_home = False
        self.with_room: dict[int, int] = {}  # shards an image showed with room: the seats it showed free
        self.healed = False  # whether this request already tried to finish a pending promotion
        self.lane: int | None = None  # the first shard that refused: the student's lane of the waiting list
        self.lane_image: SeatShard | None = None
        self.gate: bool = False  # whether the lane's image says its gate is closed (every shard full)
        self.raised = False  # whether it says a raise waits to be handed to the people waiting (gate 2)
        self.busy: set[int] = set()  # shards whose seat attempt met a conflict (held by another transaction)
        self.elsewhere = False
        self.full: set[int] = set()  # shards whose image showed every seat taken
        self.looks = 0  # reads of other shards after the home shard was full (SEAT_LOOKS)
        self.closed_seen = False  # whether any shard's image showed the gate closed: no seat to look for
        # The block this request claimed or found pending, with the lane image (lane_next, lane_end) and the time
        # it was planned against: while the lane still shows that image the block is not installed, so the next
        # round installs it without claiming again.
        self.block: tuple[tuple[Any, Any], datetime, waitlist_module.Block] | None = None
        # Whether this request met the crowd (a conflict, a busy queue item): its lane claims bigger blocks.
        self.crowded = False
        self._home: tuple[int, int] | None = None  # (shard count, the first shard for it)

    def home(self) -> int:
        """The shard this student tries first (``seats.first_shard``), drawn once per shard count."""
        if self._home is None or self._home[0] != self.count:
            self._home = (self.count, seats_module.first_shard(self.event_id, self.user_id, self.count))
        return self._home[1]

    def conflicted(self, shard: int) -> None:
        """A seat attempt on ``shard`` met another transaction: the next one goes to another shard, so a burst
        spreads over the shards instead of queueing on a held one (with no image, a conflict says nothing of
        room, so a full event still learns it from the next refusal)."""
        self.busy.add(shard)
        self.crowded = True
        # A shard a read showed with room is held: most likely someone is taking that seat, so the image is
        # stale; the next round reads again rather than queueing on it (at the end of a burst every reader
        # saw the same last shards with room, and their attempts conflicted each other to 503s).
        self.with_room.pop(shard, None)
        if len(self.busy) >= self.count:
            self.busy = {shard}
        if self.lane is None:
            self.elsewhere = True

    def next_shard(self, attempt: _NewRegistration) -> int | None:
        if not self.tried_home:
            self.tried_home = True
            return self.home()
        if self.with_room:
            # Spread the newcomers sent away over the shards with room in proportion to the seats each image showed
            # free, so the shards fill together: a shard takes one transaction at a time, so the last seats go as
            # fast as the number of shards still holding them allows, and a hash pick left them on a few (at the
            # end of a K = 1 burst the last 100 seats took 0.13 s, the last 50 at 1,160 a second). Only where to
            # try is random; the seat's condition decides.
            shards = [k for k in self.with_room if k not in self.busy] or list(self.with_room)
            return _random.choices(shards, weights=[self.with_room[k] for k in shards])[0]
        if self.elsewhere:
            # A seat attempt met another transaction on its shard: try one nobody is known to hold, and none an
            # image in this process showed full while others remain (as a look skips them). Only where to look is
            # random; the seat's condition still decides.
            self.elsewhere = False
            free = [k for k in range(self.count) if k not in self.busy] or list(range(self.count))
            return _random.choice([k for k in free if k not in self.full and not seats_module.known_full_shard(
                self.event_id, k, self.count)] or free)
        if self.lane is None or self.lane >= self.count:
            # No image of a lane yet (the shards' number changed under us): look at the home shard again.
            self.lane, self.lane_image = None, None
            return self.home()
        while not self.gate and not self.closed_seen and self.looks < SEAT_LOOKS and len(self.full) < self.count:
            # The waiting list is open, so the event was not full when the image was taken: look at other shards,
            # not ones known full, before the gate's read of them all. Only where to look is random.
            self.looks += 1
            self.look(attempt)
            if not self.tried_home or self.with_room:
                # A seat a read showed free, or the event's layout upgraded (from the home shard again).
                return self.next_shard(attempt)
        return None

    def sample(self, shards: list[int], size: int, *, also: int | None = None) -> list[SeatShard] | None:
        """Up to ``size`` of ``shards``, picked at random, and shard ``also``, read strongly consistent in one
        BatchGetItem; None when the read was throttled past botocore's retries."""
        picked = _random.sample(shards, min(size, len(shards))) + ([] if also is None else [also])
        try:
            return list(SeatShard.batch_get([SeatShard.key_for(self.event_id, k) for k in picked],
                                            consistent_read=True))
        except PynamoDBException as error:
            if response_code(error) in TRANSIENT:
                return None
            raise

    def move_lane(self) -> None:
        """Join in the lane, or one of LANE_LOOK others, whose gate is closed (one read of them all, which decides
        nothing: the join's own conditions do), preferring one whose block still has a ticket, so the join claims
        no block; keep the old image if none is closed. Any lane will do: tickets come from one sequence."""
        others = [k for k in range(self.count) if k != self.lane]
        images = self.sample(others, LANE_LOOK, also=self.lane)
        if images is None:
            return
        closed = [image for image in images if int(image.gate or 0) == CLOSED
                  and image.layout == CURRENT_LAYOUT and int(image.shards) == self.count]
        if not closed:
            return
        now = utcnow()
        image = _random.choice([i for i in closed if waitlist_module.block_usable(i, now)] or closed)
        self.lane, self.lane_image, self.block = int(image.shard), image, None

    def look(self, attempt: _NewRegistration) -> None:
        """Read SEAT_LOOK shards no image showed full (one strongly consistent BatchGetItem): a read that holds
        nothing and decides nothing; the seat attempt it leads to is decided by its own condition."""
        # Shards this process saw full are left out too while others remain: their seats come back only when a
        # student cancels, and a read of a full shard is a read unit spent on nothing.
        unknown = [k for k in range(self.count) if k not in self.full]
        images = self.sample([k for k in unknown if not seats_module.known_full_shard(self.event_id, k, self.count)]
                             or unknown, SEAT_LOOK)
        if images is None:
            return  # throttled past botocore's retries: the gate's read of every shard comes next
        self.seen(images, attempt)

    def seen(self, images: list[SeatShard], attempt: _NewRegistration) -> bool:
        """Learn from shards read (not refused): which have room, which are full. False if one showed the event's
        layout upgraded, which sends the route back to the home shard."""
        for image in images:
            self.refused(int(image.shard), image.serialize(), attempt)
            if not self.tried_home:
                return False
        return True

    def refused(self, shard: int, raw_item: dict[str, Any] | None, attempt: _NewRegistration) -> None:
        if not raw_item:
            _explain_missing_shard(self.event_id)
            self.count, self.tried_home, self.with_room, self.full = 1, False, {}, set()
            self.lane, self.lane_image = None, None
            return
        image = SeatShard.from_raw_data(raw_item)
        waitlist_module.remember_lane(image)  # a position read may then skip this lane (waitlist._lane_images)
        if image.starts_at is not None and image.starts_at <= attempt.created_at:
            _refuse_if_closed({"starts_at": image.starts_at}, attempt)
        if upgrade_if_legacy(event_id=self.event_id, layout=image.layout):
            # Refused for the event's layout, not for a full shard: its claims are in the current keys now.
            self.tried_home, self.with_room = False, {}
            self.lane, self.lane_image = None, None
            return
        if int(image.shards) != self.count:
            self.count = int(image.shards)
            seats_module.remember_shards(self.event_id, self.count)
            self.with_room = {k: room for k, room in self.with_room.items() if k < self.count}
            self.full = {k for k in self.full if k < self.count}
        if int(image.taken) < int(image.capacity):
            self.with_room[shard] = int(image.capacity) - int(image.taken)
            self.full.discard(shard)
            seats_module.remember_full(self.event_id, False)  # a seat is free: the event is not full
        else:
            self.with_room.pop(shard, None)
            self.full.add(shard)
        seats_module.remember_shard(self.event_id, shard, self.count, full=shard in self.full)
        if image.gate_closed:
            # Any shard that copied the closed gate says every shard was full when it closed (a seat freed since
            # goes to the people waiting, or reopens the gate on every shard): room seen in older images is gone,
            # and a seat attempt there would only be refused after holding a lane that joiners need.
            self.with_room.clear()
            self.closed_seen = True
        if self.lane is None:
            self.lane = shard
        if shard == self.lane:
            # Only the lane's own copy of the gate counts: another lane may have copied a closed gate before it.
            self.lane_image = image
            self.gate = image.gate_closed
            self.raised = int(image.gate or 0) == RAISED
            if self.gate:
                # A lane closed means the event's gate is (an open lane may just not have copied it yet: only
                # the gate's own read forgets the hint).
                seats_module.remember_full(self.event_id, True)

    def close_gate(self, attempt: _NewRegistration) -> None:
        """The lane's gate is open and the seats tried were full: look at the event's gate.

        Closed: copy it into the lane (one UpdateItem of the lane, ``lane_copy``). Open: read every shard, after
        the gate (one strongly consistent BatchGetItem: a read that holds nothing, so seat attempts do not stop
        it, and decides nothing); a shard with room is the next round's try, and with none the gate closes by
        one write under the epoch read (``gate_close``), which fails if any seat was freed since that read.
        """
        gate = gate_of(event_id=self.event_id)
        if not gate.closed:
            seats_module.remember_full(self.event_id, False)
            self.closed_seen = False  # reopened since that image: every shard is open again
            count = int(gate.shards)
            try:
                shards = seats_module.shards_get(event_id=self.event_id, count=count)
            except PynamoDBException as error:
                # Throttled past botocore's retries (the table's read ceiling, at the end of a burst): a pause
                # and another look, as when the gate itself is busy; it was a 500.
                if response_code(error) in TRANSIENT:
                    raise GateBusy() from error
                raise
            if len(shards) < count:
                _explain_missing_shard(self.event_id)
                self.forget_event()
                return
            if not self.seen(shards, attempt):
                return  # the event's layout was upgraded: look again from the home shard
            if self.with_room or self.gate or not gate_close(gate=gate):
                return  # a seat to try, the lane closed meanwhile, or the gate moved: the next round says
        seats_module.remember_full(self.event_id, True)
        self.raised = int(gate.state) == RAISED
        if self.raised and not self.healed:
            # A raise not handed out yet (its promotion did not finish): finish it before this newcomer, who
            # must not overtake the people waiting, then look again.
            self.healed = True
            _promote_best_effort(self.event_id)
            self.forget_event()
            return
        if self.lane is None:
            return
        if lane_copy(gate=gate, lane=self.lane):
            self.gate, self.lane_image.gate = True, int(gate.state)
        else:
            self.reread_lane(attempt)  # copied by someone else, or the gate reopened: the lane's image says

    def reread_lane(self, attempt: _NewRegistration) -> None:
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
        self.refused(shard, image.serialize(), attempt)

    def forget_event(self) -> None:
        self.tried_home, self.with_room, self.full, self.closed_seen = False, {}, set(), False
        self.lane, self.lane_image = None, None


def _explain_missing_shard(event_id: str) -> None:
    """A seat's condition failed without an image: the shard does not exist. A read that only explains it: no
    such event (404), or an event from before the shards, which are made now (``shard_seats``) before retrying."""
    try:
        event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    except EventSeats.DoesNotExist:
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.") from None
    if event.seat_shards:
        # Shards are never removed while their event exists: this one is being deleted (a lab scratch event).
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.")
    shard_event(event_id=event_id)


def _refuse_if_closed(seats: dict[str, Any], attempt: _NewRegistration) -> None:
    starts_at = seats["starts_at"]
    if starts_at is not None and starts_at <= attempt.created_at:
        raise RegistrationError(
            "conflict", f"Registration closed when the event started ({starts_at:%a %-d %b %Y, %H:%M} UTC): "
                        "nobody can register or join the waiting list any more.",
            reason="registration_closed", starts_at=starts_at.isoformat())


def _promote_best_effort(event_id: str) -> None:
    try:
        waitlist_promote(event_id=event_id)
    except Exception:  # noqa: BLE001 - the outbox message of the edit that freed the seats will finish it
        logger.warning("could not finish the promotion of event %s", event_id, exc_info=True)


def _base_transaction(attempt: _NewRegistration, *, status: str, position: int | None, ticket: int | None,
                      shard: int | None = None, lane: int | None = None) -> tuple[LabelledTransaction, StoredResponse]:
    """The items common to both kinds of new registration, with the response computed up front. The event-side
    copy is a confirmed registration's own item; a waitlisted one's is its waitlist entry, written here too."""
    body = selectors.registration_to_dict(
        registration_id=attempt.registration_id, event_id=attempt.event_id, user_id=attempt.user_id,
        status=status, position=position, created_at=attempt.created_at, user_name=attempt.user_name,
    )
    if status == WAITLISTED:
        # A join counts its place as of its lane's block: tickets other lanes never hand out still count as people
        # ahead, so the number is an upper bound and is named so. The exact one is a read (the page shows it).
        body = {("position_at_most" if name == "position" else name): value for name, value in body.items()}
    response = StoredResponse.json(body, status=201)
    fields = {"registration_id": attempt.registration_id, "event_id": attempt.event_id,
              "user_id": attempt.user_id, "user_name": attempt.user_name, "status": status,
              "created_at": attempt.created_at, "ticket": ticket, "shard": shard, "lane": lane}
    transaction = LabelledTransaction()
    transaction.save(
        IDEMPOTENCY,
        completed_record(user_id=attempt.user_id, key=attempt.idempotency_key, fingerprint=attempt.fingerprint,
                         response=response, now=attempt.created_at),
        condition=record_is_absent_or_expired(attempt.created_at), return_old_on_failure=True,
    )
    transaction.save(
        CLAIM, RegistrationClaim(*RegistrationClaim.key_for(attempt.event_id, attempt.user_id), **fields),
        condition=RegistrationClaim.pk.does_not_exist(), return_old_on_failure=True,
    )
    transaction.save(USER_REGISTRATION,
                     Registration(*Registration.user_key_for(attempt.user_id, attempt.registration_id), **fields,
                                  layout=CURRENT_LAYOUT))
    index = attendees.index_fields(event_id=attempt.event_id, name=attempt.user_name or attempt.user_id,
                                   registration_id=attempt.registration_id)
    if status == WAITLISTED:
        transaction.save(WAITLIST_ENTRY, WaitlistEntry(
            *WaitlistEntry.key_for(attempt.event_id, ticket, lane), registration_id=attempt.registration_id,
            event_id=attempt.event_id, user_id=attempt.user_id, user_name=attempt.user_name, status=status,
            created_at=attempt.created_at, ticket=ticket, lane=lane, **index,
        ), condition=WaitlistEntry.pk.does_not_exist())
    else:
        transaction.save(EVENT_REGISTRATION,
                         Registration(*Registration.event_key_for(attempt.event_id, attempt.registration_id),
                                      **fields, **index))
    transaction.save(OUTBOX, outbox_message(
        message_type="RegistrationCreated", now=attempt.created_at,
        # "user" is the immutable key in every message, as in the cancel and promote ones: the relay finds the
        # recipient by it, never by a name someone else may hold by then.
        payload={**body, "user": attempt.user_id},
    ))
    return transaction, response


def _confirm_transaction(attempt: _NewRegistration, shard: int) -> tuple[LabelledTransaction, StoredResponse]:
    # One seat of one shard, and nothing else of the event: nobody waits while a shard has room (a seat freed
    # with people waiting goes to the head in the same transaction, a raise goes to them first), so the seat's
    # own condition is the whole "free seat nobody waits for" test. ``layout``: the claim is written under the
    # current key only once no claim of the event can be left under the legacy one (services/layout.py).
    transaction, response = _base_transaction(attempt, status=CONFIRMED, position=None, ticket=None, shard=shard)
    transaction.update(
        SEAT, SeatShard(*SeatShard.key_for(attempt.event_id, shard)),
        actions=[SeatShard.taken.add(1)],
        condition=(SeatShard.pk.exists() & (SeatShard.taken < SeatShard.capacity)
                   & (SeatShard.starts_at > attempt.created_at) & (SeatShard.layout == CURRENT_LAYOUT)),
        return_old_on_failure=True,
    )
    return transaction, response


def _unchanged(attribute, value: int | None):
    return attribute.does_not_exist() if value is None else attribute == value


@dataclass
class _Join:
    """One round of joining the waiting list, planned from the images seen so far (the lane's gate closed).

    The round takes the lane's next ticket in a transaction that touches the lane's shard and no other item of
    the event. When the lane needs a new block, ``plan`` first claims it from the event's queue item by
    a single write (``waitlist.claim_block``), and this transaction installs it; a block claimed earlier and
    never installed is installed now, or, claimed too long ago, installed as gone (``registers`` False: the
    round hands out nothing, the next one claims afresh).
    """

    attempt: _NewRegistration
    route: _Route
    lane: int
    ticket: int
    now: datetime
    block: waitlist_module.Block | None = None
    position: int = 1

    @classmethod
    def plan(cls, attempt: _NewRegistration, route: _Route) -> _Join:
        image, now = route.lane_image, utcnow()
        if waitlist_module.block_usable(image, now):
            ticket = int(image.lane_next)
            return cls(attempt=attempt, route=route, lane=route.lane, ticket=ticket, now=now,
                       position=max(ticket - int(image.lane_left or 0), 1))
        seen = (image.lane_next, image.lane_end)
        if route.block is not None and route.block[0] == seen and now < route.block[1] + timedelta(
                seconds=waitlist_module.block_seconds()):
            block = route.block[2]
        else:
            block = waitlist_module.claim_block(
                event_id=route.event_id, lane=image,
                size=waitlist_module.next_block_size(image, now, crowded=route.crowded), now=now)
            route.block = (seen, now, block)
        join = cls(attempt=attempt, route=route, lane=route.lane, ticket=block.first, now=now, block=block)
        join.position = max(block.first - join._left(), 1)
        return join

    @property
    def registers(self) -> bool:
        return not (self.block is not None and self.block.stale)

    def _correction(self) -> int:
        """How much the queue's ``left`` is off once this install commits: the claim counted the replaced block's
        tickets from ``assumed_from`` as gone, the lane may have handed out some since; a stale block goes whole."""
        if self.block is None:
            return 0
        correction = self.block.assumed_from - self.route.lane_image.unissued[0]
        return correction + (self.block.end - self.block.first if self.block.stale else 0)

    def _left(self) -> int:
        return self.block.left + self._correction()

    def transaction(self) -> tuple[LabelledTransaction, StoredResponse | None]:
        attempt, image, block = self.attempt, self.route.lane_image, self.block
        # The lane's block is still what its image showed: two joiners of one lane never take the same ticket.
        # ``layout``: no registration is written under the current keys while a claim of the event may still sit
        # under the legacy ones (services/layout.py); the lane's refused image says so, and the event is upgraded.
        condition = (SeatShard.pk.exists() & _unchanged(SeatShard.lane_next, image.lane_next)
                     & _unchanged(SeatShard.lane_end, image.lane_end)
                     & (SeatShard.starts_at > attempt.created_at) & (SeatShard.layout == CURRENT_LAYOUT))
        # Gate 1: closed. Gate 2 (RAISED): closed with seats of a raise waiting to go to the people waiting;
        # a newcomer finishes that promotion first, and joins behind them only if it could not.
        condition &= (SeatShard.gate >= CLOSED) if self.route.healed else (SeatShard.gate == CLOSED)
        if block is not None and block.stale:
            transaction, response, actions = LabelledTransaction(), None, [SeatShard.lane_next.set(block.end)]
        else:
            transaction, response = _base_transaction(attempt, status=WAITLISTED, position=self.position,
                                                      ticket=self.ticket, lane=self.lane)
            actions = [SeatShard.waiting.add(1), SeatShard.lane_next.set(self.ticket + 1)]
        if block is not None:
            # The claimed block becomes the lane's; what the old one did not hand out is gone, recorded in the
            # departure tree in this very transaction (positions stay exact), and ``left`` fixed if it was off.
            actions += [SeatShard.lane_end.set(block.end), SeatShard.lane_at.set(self.now),
                        SeatShard.lane_size.set(block.end - block.first), SeatShard.lane_left.set(self._left())]
            gone = [*range(*image.unissued), *(range(block.first, block.end) if block.stale else ())]
            if gone:
                waitlist_module.record_departures(transaction, event_id=attempt.event_id, tickets=gone)
            if self._correction():
                transaction.update(QUEUE, WaitlistQueue(*WaitlistQueue.key_for(attempt.event_id)),
                                   actions=[WaitlistQueue.left.add(self._correction())],
                                   condition=WaitlistQueue.pk.exists())
        transaction.update(LANE, SeatShard(*SeatShard.key_for(attempt.event_id, self.lane)), actions=actions,
                           condition=condition, return_old_on_failure=True)
        return transaction, response

    def landed(self) -> None:
        """This round's transaction committed without registering: what it wrote is known exactly (its conditions
        pinned the state before), so the route's image follows without a read."""
        if self.block is not None and self.block.stale:
            image = self.route.lane_image
            image.lane_next, image.lane_end = self.block.end, self.block.end
            image.lane_at, image.lane_size, image.lane_left = self.now, self.block.end - self.block.first, self._left()


def _replay(raw_item: dict[str, Any], attempt: _NewRegistration) -> RegistrationOutcome:
    return RegistrationOutcome(_replay_raw(raw_item, attempt.fingerprint), "replayed")


def _already_registered(claim: RegistrationClaim, attempt: _NewRegistration, *,
                        sleep: Callable[[float], None]) -> RegistrationOutcome:
    """The student holds a registration from another tap: answer 200 with it, and remember that under this key.

    The claim came back as the failed transaction's ALL_OLD image, so a confirmed registration costs one more
    request (storing the outcome); a waitlisted one also counts its current position.
    """
    try:
        view = selectors.registration_view(registration=claim)
    except PynamoDBException as error:
        # A waitlisted claim's position is read from the lanes and the queue: throttled past botocore's retries
        # (the table's read ceiling at the end of a burst) it is a 503, nothing stored, so the tap's retry gets
        # the answer; it was a 500 in bench-hot's K = 1 crowd.
        if response_code(error) in TRANSIENT:
            raise _busy(CROWDED) from error
        raise
    response = StoredResponse.json(view, status=200)
    first = remember_answer(user_id=attempt.user_id, key=attempt.idempotency_key, fingerprint=attempt.fingerprint,
                            response=response, now=attempt.created_at, sleep=sleep)
    if first is not None:
        return _replay(first, attempt)  # a duplicate of this very tap stored its answer first: the same bytes
    return RegistrationOutcome(response, "already_registered")
