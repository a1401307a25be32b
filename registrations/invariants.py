"""What must always be true of registrations, checked by ``manage.py check_invariants`` (and after every race
test). Each check sees the items of one consistent scan as a stream and keeps per-event aggregates only; a
message names the event (or item) involved."""

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from registrations.checkins.models import CheckIn
from registrations.events.models import Event
from registrations.messages.models import EventMessage
from registrations.models import CONFIRMED, OFFERED, WAITLISTED, Registration, RegistrationClaim, WaitlistEntry
from registrations.offers.models import Offer
from registrations.seating.shards import lane_count
from tems.clock import utcnow
from tems.invariants import Item, Multiset, StreamingCheck, invariant

LIVE_STATUSES = {CONFIRMED, WAITLISTED, OFFERED}


def _is_event(item: Item) -> bool:
    return item.get("entity") == "Event"


def _event_pk(item: Item) -> str:
    """The event partition of the event an event-side item (a registration copy in one of its buckets) belongs
    to."""
    return Event.pk_for(item["event_id"])


def _in_event_partition(item: Item) -> bool:
    """An item of the event's own partition (its check-ins, the door's log, the departure counters)."""
    return item["PK"].startswith(Event.PK_PREFIX)


@dataclass
class _Counts:
    """An event's stored counters (None until its METADATA item has been seen) and what its items add up to."""

    stored: dict | None = None
    tally: defaultdict = field(default_factory=lambda: defaultdict(int))


def _seat_shard(item: Item) -> bool:
    return item.get("entity") == "SeatShard"


def _waitlist_entry(item: Item) -> bool:
    return item.get("entity") == "WaitlistEntry"


def _event_pk_of_shard(item: Item) -> str:
    return Event.pk_for(item["event_id"])


class _PerEvent(StreamingCheck):
    counters: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.events: defaultdict[str, _Counts] = defaultdict(_Counts)

    def observe(self, item: Item) -> None:
        if _is_event(item):
            self.events[item["PK"]].stored = {name: item.get(name) for name in (*self.counters, "seat_shards")}
        elif _seat_shard(item):
            tally = self.events[_event_pk_of_shard(item)].tally
            tally["shard_taken"] += int(item.get("taken", 0))
            tally["shard_free"] += max(int(item["capacity"]) - int(item.get("taken", 0)), 0)
            tally["lane_waiting"] += int(item.get("waiting", 0))
        elif _waitlist_entry(item):
            # In its lane's partition: counted for its event.
            self.count(item, self.events[Event.pk_for(item["event_id"])].tally)
        elif Registration.is_event_side(item["PK"]):
            self.count(item, self.events[_event_pk(item)].tally)
        elif _in_event_partition(item):
            self.count(item, self.events[item["PK"]].tally)

    def count(self, item: Item, tally: defaultdict) -> None:
        raise NotImplementedError

    def seen(self) -> Iterator[tuple[str, dict, defaultdict]]:
        for pk, counts in sorted(self.events.items()):
            if counts.stored is not None:
                yield pk, counts.stored, counts.tally


@invariant("event counters match their registration items")
class EventCountersMatch(_PerEvent):
    """An event's seats taken (its shards' sum) and its waiting list (its lanes' sum) are its live registrations."""

    def count(self, item: Item, tally: defaultdict) -> None:
        is_copy = item["SK"].startswith(Registration.SK_PREFIX) or WaitlistEntry.is_entry(item)
        if is_copy and item.get("status") in LIVE_STATUSES:
            # An offered seat is a taken seat: held for the offer, counted with the confirmed ones.
            tally[CONFIRMED if item["status"] == OFFERED else item["status"]] += 1

    def problems(self) -> Iterator[str]:
        for pk, _, tally in self.seen():
            if tally["shard_taken"] != tally[CONFIRMED]:
                yield f"{pk}: {tally['shard_taken']} seats taken but {tally[CONFIRMED]} confirmed"
            if tally["lane_waiting"] != tally[WAITLISTED]:
                yield f"{pk}: {tally['lane_waiting']} waiting but {tally[WAITLISTED]} waitlisted"


@invariant("events never exceed capacity")
class EventsWithinCapacity(StreamingCheck):
    """No shard over its slice, the slices add up to the event's ``sliced``, which is at most its capacity, and
    there are exactly ``seat_shards`` shards."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.events: dict[str, Item] = {}
        self.shards: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])  # [shards, sum of slices]

    def observe(self, item: Item) -> None:
        if _is_event(item):
            self.events[item["PK"]] = {name: item.get(name) for name in ("capacity", "sliced", "seat_shards")}
        elif _seat_shard(item):
            if int(item.get("taken", 0)) > int(item["capacity"]):
                self.found.append(f"{item['PK']}: {item['taken']} taken over its slice of {item['capacity']}")
            totals = self.shards[_event_pk_of_shard(item)]
            totals[0] += 1
            totals[1] += int(item["capacity"])

    def problems(self) -> Iterator[str]:
        yield from self.found
        for pk, event in sorted(self.events.items()):
            shards, sliced = self.shards[pk]
            if shards != int(event["seat_shards"] or 0):
                yield f"{pk}: {shards} seat shards but seat_shards={event['seat_shards']}"
            if sliced != int(event["sliced"] or 0):
                yield f"{pk}: slices add up to {sliced} but sliced={event['sliced']}"
            if int(event["sliced"] or 0) > int(event["capacity"]):
                yield f"{pk}: {event['sliced']} seats sliced over capacity {event['capacity']}"


@invariant("every claim has both registration items and every registration its claim")
class ClaimsMatchRegistrations(StreamingCheck):
    """Per event, the claims, the event-side and the user-side registrations name the same (registration,
    status) pairs: compared as fingerprints, so no registration is held in memory. A waitlist entry that carries
    its registration is that registration's event-side copy."""

    SIDES = ("claims", "event-side registrations", "user-side registrations")

    def __init__(self) -> None:
        self.events: defaultdict[str, dict[str, Multiset]] = defaultdict(
            lambda: {side: Multiset() for side in self.SIDES})

    def observe(self, item: Item) -> None:
        entity = item.get("entity")
        if entity == "RegistrationClaim":
            side = "claims"
        elif entity == "Registration":
            side = self.SIDES[1] if Registration.is_event_side(item["PK"]) else self.SIDES[2]
        elif WaitlistEntry.is_entry(item):
            side = self.SIDES[1]
        else:
            return
        self.events[item["event_id"]][side].add(item["registration_id"], item["user_id"], item.get("status"))

    def problems(self) -> Iterator[str]:
        for event_id, sides in sorted(self.events.items()):
            claims = sides["claims"]
            for side in self.SIDES[1:]:
                if sides[side] != claims:
                    yield (f"event {event_id}: {claims.count} claim(s) but {sides[side].count} {side}, or the "
                           f"registrations or statuses they name differ")


@invariant("registrations are kept at the keys their models build")
class RegistrationsAtTheirKeys(StreamingCheck):
    """A claim is at the very key its model builds (the student's partition: under any other key a second
    registration of the student would not meet it), an event-side copy in its registration's bucket and index
    partition, and a waitlist entry in its registration's attendee index partition."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def observe(self, item: Item) -> None:
        entity, pk = item.get("entity"), item["PK"]
        if entity == "RegistrationClaim":
            if (pk, item["SK"]) != RegistrationClaim.key_for(item["event_id"], item["user_id"]):
                self.found.append(f"{pk}/{item['SK']}: a claim of {item['user_id']} for event {item['event_id']} "
                                  "is not under the key its model builds")
        elif entity == "Registration" and Registration.is_event_side(pk):
            name = item.get("user_name") or item["user_id"]
            index = Registration.attendee_index_key_for(item["event_id"], name, item["registration_id"])
            if ((pk, item["SK"]) != Registration.event_key_for(item["event_id"], item["registration_id"])
                    or item.get("GSI1PK", index[0]) != index[0]):
                self.found.append(f"{pk}/{item['SK']}: not in the bucket (or index partition) of registration "
                                  f"{item['registration_id']}")
        elif WaitlistEntry.is_entry(item):
            name = item.get("user_name") or item["user_id"]
            if item.get("GSI1PK") != Registration.attendee_index_key_for(item["event_id"], name,
                                                                          item["registration_id"])[0]:
                self.found.append(f"{pk}/{item['SK']}: the waitlist entry of registration {item['registration_id']} "
                                  "is not in its attendee index partition")

    def problems(self) -> Iterator[str]:
        yield from self.found


@invariant("nobody waits while a seat is free")
class NobodyWaitsForAFreeSeat(_PerEvent):
    """Except on a cancelled event: its promotions stop where it was called off (a seat freed by a raise whose
    promotion had not run yet stays free, and its waiting list stays as it was)."""

    counters = ("capacity", "sliced", "cancelled_at")

    def count(self, item: Item, tally: defaultdict) -> None:
        if item["SK"].startswith(WaitlistEntry.SK_PREFIX):
            tally["waiting"] += 1

    def problems(self) -> Iterator[str]:
        for pk, stored, tally in self.seen():
            if stored.get("cancelled_at"):
                continue
            # Room in a shard, or seats of a raise not handed out yet.
            free = tally["shard_free"] + stored["capacity"] - int(stored["sliced"] or 0)
            if tally["waiting"] and free > 0:
                yield f"{pk}: {tally['waiting']} waiting while {free} seat(s) free"


@invariant("waitlist entries are unique and in ticket order")
class WaitlistInOrder(StreamingCheck):
    """Each entry's key is its ticket (so keys are unique and in ticket order), no ticket is beyond the event's
    sequence (its queue item's), and per event the entries and the
    waitlisted registrations' user-side copies name the same (registration, ticket): the user side, since an
    entry may itself be its registration's event-side copy."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.seq: dict[str, int] = {}
        self.highest: defaultdict[str, int] = defaultdict(int)
        self.entries: defaultdict[str, Multiset] = defaultdict(Multiset)
        self.waiting: defaultdict[str, Multiset] = defaultdict(Multiset)

    def observe(self, item: Item) -> None:
        if item.get("entity") == "WaitlistQueue":
            self.seq[Event.pk_for(item["event_id"])] = int(item.get("seq", 0))
        elif _waitlist_entry(item):
            ticket, pk = int(item["ticket"]), Event.pk_for(item["event_id"])
            lane = None if item.get("lane") is None else int(item["lane"])
            if lane is None or (item["PK"], item["SK"]) != WaitlistEntry.key_for(item["event_id"], ticket, lane):
                self.found.append(f"{item['PK']}/{item['SK']}: holds ticket {ticket} of lane {lane}, out of place")
            self.highest[pk] = max(self.highest[pk], ticket)
            self.entries[pk].add(item["registration_id"], ticket)
        elif (item.get("entity") == "Registration" and Registration.is_user_side(item["PK"])
              and item.get("status") == WAITLISTED):
            self.waiting[Event.pk_for(item["event_id"])].add(item["registration_id"], int(item.get("ticket", -1)))

    def problems(self) -> Iterator[str]:
        yield from self.found
        for pk, highest in sorted(self.highest.items()):
            if highest > self.seq.get(pk, 0):
                yield f"{pk}: ticket {highest} beyond the queue's seq={self.seq.get(pk, 0)}"
        for pk in sorted(self.entries.keys() | self.waiting.keys()):
            entries, waiting = self.entries[pk], self.waiting[pk]
            if entries != waiting:
                yield (f"{pk}: {entries.count} waitlist entries but {waiting.count} waitlisted registrations, or "
                       f"the registrations or tickets they name differ")


@invariant("the waiting list's lanes count their entries and its gate is closed only on a full event")
class LanesAndGate(StreamingCheck):
    """Per lane (seat shard): ``waiting`` = its entries, and nobody waits in a lane whose gate is open. Per event,
    with its gate item (``SeatGate``): it names as many shards as there are; every lane has its ``opened`` (so
    each lane's copy is of the gate's current round; an open outer lane may be one ahead, opened by a reopening
    whose own transaction was refused); a lane is closed only while the gate is; and while the gate is closed
    every shard is full (so nobody joins beside a seat)."""

    def __init__(self) -> None:
        self.waiting: dict[str, int] = {}
        self.entries: defaultdict[str, int] = defaultdict(int)
        self.lane_gates: defaultdict[str, set[bool]] = defaultdict(set)
        self.lane_opened: defaultdict[str, set[int]] = defaultdict(set)
        self.outer_opened: defaultdict[str, set[int]] = defaultdict(set)
        self.open_lanes_waiting: defaultdict[str, int] = defaultdict(int)
        self.free: defaultdict[str, int] = defaultdict(int)
        self.lanes: defaultdict[str, int] = defaultdict(int)
        self.gate: dict[str, tuple[bool, int, int]] = {}  # event pk -> (closed, opened, shards)

    def observe(self, item: Item) -> None:
        if _seat_shard(item):
            event = _event_pk_of_shard(item)
            self.waiting[item["PK"]] = int(item.get("waiting", 0))
            self.lanes[event] += 1
            self.lane_gates[event].add(bool(item.get("gate")))
            if int(item["shard"]) < lane_count(int(item.get("shards", 0))) or item.get("gate"):
                self.lane_opened[event].add(int(item.get("opened", 0)))
            else:
                # An open outer lane opened by a reopening whose own transaction did not commit is one ahead until
                # the next (marks.reopen_outer_lanes).
                self.outer_opened[event].add(int(item.get("opened", 0)))
            self.free[event] += max(int(item["capacity"]) - int(item.get("taken", 0)), 0)
            if not item.get("gate"):
                self.open_lanes_waiting[event] += int(item.get("waiting", 0))
        elif item.get("entity") == "SeatGate":
            self.gate[Event.pk_for(item["event_id"])] = (bool(item.get("state")), int(item.get("opened", 0)),
                                                         int(item.get("shards", 0)))
        elif _waitlist_entry(item):
            self.entries[item["PK"]] += 1

    def problems(self) -> Iterator[str]:
        for pk in sorted(self.waiting.keys() | self.entries.keys()):
            if self.waiting.get(pk, 0) != self.entries[pk]:
                yield f"{pk}: waiting={self.waiting.get(pk, 0)} but {self.entries[pk]} entries in the lane"
        for event in sorted(self.lanes.keys() | self.gate.keys()):
            if self.open_lanes_waiting[event]:
                yield f"{event}: {self.open_lanes_waiting[event]} waiting in lanes whose gate is open"
            if event not in self.gate:
                yield f"{event}: seat shards but no gate item"
                continue
            closed, opened, shards = self.gate[event]
            if shards != self.lanes[event]:
                yield f"{event}: the gate names {shards} shards but there are {self.lanes[event]}"
            if self.lane_opened[event] - {opened}:
                yield (f"{event}: lanes of the gate's reopenings {sorted(self.lane_opened[event])}, the gate "
                       f"is at {opened}")
            if self.outer_opened[event] - {opened, opened + 1}:
                yield (f"{event}: open outer lanes of the gate's reopenings {sorted(self.outer_opened[event])}, "
                       f"the gate is at {opened}")
            if True in self.lane_gates[event] and not closed:
                yield f"{event}: a lane's gate is closed while the event's gate is open"
            if closed and self.free[event]:
                yield f"{event}: the gate is closed while {self.free[event]} seat(s) are free in the shards"


@invariant("each event's checked-in count matches its check-ins")
class CheckinsMatch(_PerEvent):
    counters = ("checked_in_count",)

    def count(self, item: Item, tally: defaultdict) -> None:
        if item["SK"].startswith(CheckIn.SK_PREFIX):
            tally["checkins"] += 1

    def problems(self) -> Iterator[str]:
        for pk, stored, tally in self.seen():
            if int(stored["checked_in_count"] or 0) != tally["checkins"]:
                yield f"{pk}: checked_in_count={stored['checked_in_count'] or 0} but {tally['checkins']} check-ins"


# The outbox message types whose handler goes on with a message's fan-out (registrations.messages.services).
_FAN_OUT_TYPES = {"StaffMessageRequested", "ReminderRequested", "EventMessageFanOut", "EventCancellationRequested"}


@invariant("every event message is fanned out, or its fan-out waits in the outbox")
class MessagesFannedOut(StreamingCheck):
    """A message whose fan-out is not done must have an outbox message that goes on with it: otherwise some of
    its recipients would never be mailed. Keeps the ids of unfinished messages and of pending fan-outs only."""

    def __init__(self) -> None:
        self.unfinished: dict[str, str] = {}
        self.pending: set[str] = set()

    def observe(self, item: Item) -> None:
        if item.get("entity") == "EventMessage" and item.get("done_at") is None:
            self.unfinished[item["message_id"]] = item["event_id"]
        elif item.get("entity") == "OutboxMessage" and item.get("message_type") in _FAN_OUT_TYPES:
            self.pending.add(json.loads(item["payload"])["message_id"])

    def problems(self) -> Iterator[str]:
        for message_id, event_id in sorted(self.unfinished.items()):
            if message_id not in self.pending:
                yield (f"{EventMessage.pk_for(event_id)}: message {message_id} is not fanned out and nothing "
                       "goes on with it")


@invariant("a cancelled event admits nobody: every seat shard carries its cancellation, and it has its notice")
class CancelledEventsMarked(StreamingCheck):
    """An event whose ``cancelled_at`` is set must have the same mark on every one of its seat shards (the seat's
    and the join's conditions read it there) and its one cancellation notice. Keeps per-event marks only."""

    def __init__(self) -> None:
        self.cancelled: dict[str, tuple[str, int]] = {}  # event id -> (cancelled_at, shard count)
        self.marked: dict[str, set[int]] = defaultdict(set)  # event id -> shards carrying that mark
        self.marks: dict[tuple[str, int], str] = {}
        self.notices: set[str] = set()

    def observe(self, item: Item) -> None:
        if _is_event(item) and item.get("cancelled_at") is not None:
            self.cancelled[item["event_id"]] = (item["cancelled_at"], int(item.get("seat_shards") or 0))
        elif item.get("entity") == "SeatShard" and item.get("cancelled_at") is not None:
            self.marks[(item["event_id"], int(item["shard"]))] = item["cancelled_at"]
        elif item.get("entity") == "EventMessage" and item.get("kind") == EventMessage.CANCELLATION:
            self.notices.add(item["event_id"])

    def problems(self) -> Iterator[str]:
        for event_id, (at, count) in sorted(self.cancelled.items()):
            unmarked = [k for k in range(count) if self.marks.get((event_id, k)) != at]
            if unmarked:
                yield f"{Event.pk_for(event_id)}: cancelled, but seat shards {unmarked} do not carry it"
            if event_id not in self.notices:
                yield f"{Event.pk_for(event_id)}: cancelled without its cancellation notice"


# The relay's sweep runs every RELAY_JOB_INTERVAL_SECONDS; an offer a few passes past its end was not handed on.
OFFER_SWEEP_GRACE = timedelta(minutes=5)


@invariant("every offer holds its seat, one offer per seat, and every expired offer is handed on")
class OffersHoldTheirSeats(StreamingCheck):
    """Per registration: an offered registration (its user-side copy) has its Offer, offered, holding a seat of
    the same shard, and an offered Offer has its offered registration; so every offer holds one counted seat
    (the event counters count offered registrations as taken) and no seat is offered twice. No offer is still
    offered ``OFFER_SWEEP_GRACE`` past its end. Keeps one fingerprint set per side, not the items."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or utcnow()
        self.offered = Multiset()
        self.registrations = Multiset()
        self.found: list[str] = []

    def observe(self, item: Item) -> None:
        if item.get("entity") == "Offer" and item.get("state") in (OFFERED, Offer.CALLED_OFF):
            # A called-off offer (its event was cancelled) still names the registration that stays offered.
            self.offered.add(item["registration_id"], item["user_id"], int(item["shard"]))
            ends_at = Offer.ends_at.deserialize(item["ends_at"])
            if item["state"] == OFFERED and ends_at + OFFER_SWEEP_GRACE < self.now:
                self.found.append(f"{item['PK']}/{item['SK']}: offer ended at {ends_at.isoformat()} and was not "
                                  "handed on")
        elif (item.get("entity") == "Registration" and Registration.is_user_side(item["PK"])
              and item.get("status") == OFFERED):
            self.registrations.add(item["registration_id"], item["user_id"], int(item.get("shard", -1)))

    def problems(self) -> Iterator[str]:
        yield from self.found
        if self.offered != self.registrations:
            yield (f"{self.offered.count} open offer(s) but {self.registrations.count} offered registration(s), or "
                   "the registrations or seats they name differ")


@invariant("every seat shard carries its event's questions version")
class ShardsCarryTheQuestionsVersion(StreamingCheck):
    """A seat (or a join) is written only under ``questions`` = the version its answers were checked against, so
    every shard of an event must carry the version of its questions item (none while it has none): a shard left
    behind by an edit would let answers to the old questions in. Keeps one version per event and per shard."""

    def __init__(self) -> None:
        self.versions: dict[str, int] = {}  # event id -> its questions item's version
        self.shards: dict[tuple[str, int], int | None] = {}

    def observe(self, item: Item) -> None:
        if item.get("entity") == "EventQuestions":
            self.versions[item["event_id"]] = int(item["version"])
        elif item.get("entity") == "SeatShard":
            found = item.get("questions")
            self.shards[(item["event_id"], int(item["shard"]))] = None if found is None else int(found)

    def problems(self) -> Iterator[str]:
        for (event_id, shard), found in sorted(self.shards.items()):
            wanted = self.versions.get(event_id)
            if found != wanted:
                yield f"{Event.pk_for(event_id)}: seat shard {shard} carries questions version {found}, not {wanted}"


# The report's and the drafts' own checks live with them; importing them registers them.
from registrations.approvals import invariants as _draft_invariants  # noqa: E402, F401
from registrations.reports import invariants as _report_invariants  # noqa: E402, F401
