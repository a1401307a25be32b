"""What must always be true of registrations, checked by ``manage.py check_invariants`` (and after every race
test). Each check sees the items of one consistent scan as a stream and keeps per-event aggregates only; a
message names the event (or item) involved."""

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from registrations.models import CONFIRMED, WAITLISTED, CheckIn, Registration, WaitlistEntry
from tems.invariants import Item, Multiset, StreamingCheck, invariant

LIVE_STATUSES = {CONFIRMED, WAITLISTED}


def _is_event(item: Item) -> bool:
    return item.get("entity") == "Event"


def _event_side(item: Item) -> bool:
    return item.get("entity") == "Registration" and Registration.is_event_side(item["PK"])


@dataclass
class _Counts:
    """An event's stored counters (None until its METADATA item has been seen) and what its items add up to."""

    stored: dict | None = None
    tally: defaultdict = field(default_factory=lambda: defaultdict(int))


class _PerEvent(StreamingCheck):
    counters: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.events: defaultdict[str, _Counts] = defaultdict(_Counts)

    def observe(self, item: Item) -> None:
        if _is_event(item):
            self.events[item["PK"]].stored = {name: item.get(name) for name in self.counters}
        elif Registration.is_event_side(item["PK"]):
            self.count(item, self.events[item["PK"]].tally)

    def count(self, item: Item, tally: defaultdict) -> None:
        raise NotImplementedError

    def seen(self) -> Iterator[tuple[str, dict, defaultdict]]:
        for pk, counts in sorted(self.events.items()):
            if counts.stored is not None:
                yield pk, counts.stored, counts.tally


@invariant("event counters match their registration items")
class EventCountersMatch(_PerEvent):
    counters = ("registered_count", "waitlist_count")

    def count(self, item: Item, tally: defaultdict) -> None:
        if item["SK"].startswith(Registration.SK_PREFIX) and item.get("status") in LIVE_STATUSES:
            tally[item["status"]] += 1

    def problems(self) -> Iterator[str]:
        for pk, stored, tally in self.seen():
            if (stored["registered_count"] or 0) != tally[CONFIRMED]:
                yield f"{pk}: registered_count={stored['registered_count']} but {tally[CONFIRMED]} confirmed"
            if (stored["waitlist_count"] or 0) != tally[WAITLISTED]:
                yield f"{pk}: waitlist_count={stored['waitlist_count']} but {tally[WAITLISTED]} waitlisted"


@invariant("events never exceed capacity")
class EventsWithinCapacity(StreamingCheck):
    def __init__(self) -> None:
        self.found: list[str] = []

    def observe(self, item: Item) -> None:
        if _is_event(item) and item.get("registered_count", 0) > item["capacity"]:
            self.found.append(f"{item['PK']}: {item['registered_count']} registered over capacity {item['capacity']}")

    def problems(self) -> list[str]:
        return self.found


@invariant("every claim has both registration items and every registration its claim")
class ClaimsMatchRegistrations(StreamingCheck):
    """Per event, the claims, the event-side and the user-side registrations name the same (registration,
    status) pairs: compared as fingerprints, so no registration is held in memory."""

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


@invariant("nobody waits while a seat is free")
class NobodyWaitsForAFreeSeat(_PerEvent):
    counters = ("capacity", "registered_count")

    def count(self, item: Item, tally: defaultdict) -> None:
        if item["SK"].startswith(WaitlistEntry.SK_PREFIX):
            tally["waiting"] += 1

    def problems(self) -> Iterator[str]:
        for pk, stored, tally in self.seen():
            free = stored["capacity"] - (stored["registered_count"] or 0)
            if tally["waiting"] and free > 0:
                yield f"{pk}: {tally['waiting']} waiting while {free} seat(s) free"


@invariant("waitlist entries are unique and in ticket order")
class WaitlistInOrder(StreamingCheck):
    """Each entry's key is its ticket (so keys are unique and in ticket order), no ticket is beyond the event's
    counter, and per event the entries and the waitlisted registrations name the same (registration, ticket)."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.seq: dict[str, int] = {}
        self.highest: defaultdict[str, int] = defaultdict(int)
        self.entries: defaultdict[str, Multiset] = defaultdict(Multiset)
        self.waiting: defaultdict[str, Multiset] = defaultdict(Multiset)

    def observe(self, item: Item) -> None:
        if _is_event(item):
            self.seq[item["PK"]] = int(item.get("waitlist_seq", 0))
        elif item.get("entity") == "WaitlistEntry":
            ticket = int(item["ticket"])
            if item["SK"] != WaitlistEntry.sk_for(ticket):
                self.found.append(f"{item['PK']}/{item['SK']}: holds ticket {ticket}, out of ticket order")
            self.highest[item["PK"]] = max(self.highest[item["PK"]], ticket)
            self.entries[item["PK"]].add(item["registration_id"], ticket)
        elif _event_side(item) and item.get("status") == WAITLISTED:
            self.waiting[item["PK"]].add(item["registration_id"], int(item.get("ticket", -1)))

    def problems(self) -> Iterator[str]:
        yield from self.found
        for pk, highest in sorted(self.highest.items()):
            if highest > self.seq.get(pk, 0):
                yield f"{pk}: ticket {highest} beyond waitlist_seq={self.seq.get(pk, 0)}"
        for pk in sorted(self.entries.keys() | self.waiting.keys()):
            entries, waiting = self.entries[pk], self.waiting[pk]
            if entries != waiting:
                yield (f"{pk}: {entries.count} waitlist entries but {waiting.count} waitlisted registrations, or "
                       f"the registrations or tickets they name differ")


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
