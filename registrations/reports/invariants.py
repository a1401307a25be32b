"""The report's counters against a recount of the items they count (registered by ``registrations.invariants``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import timedelta

from registrations.events.models import Event
from registrations.models import CONFIRMED, OFFERED, WAITLISTED, Registration
from registrations.offers.models import Offer
from registrations.reports.models import (
    ACCEPT_HISTOGRAM,
    COUNTERS,
    OFFER_ENDS,
    OFFERS_MADE,
    REGISTRATIONS,
    WAITING_JOINED,
    WAITING_LEFT,
    accepted_within,
)
from tems.clock import utcnow
from tems.invariants import Item, StreamingCheck, invariant

_STANDING = {CONFIRMED, WAITLISTED, OFFERED}
_OFFER_FIGURES = {OFFERS_MADE, *OFFER_ENDS.values(), *ACCEPT_HISTOGRAM}
_ENDED_OFFERS_KEPT = timedelta(days=Offer.KEEP_ENDED_DAYS)


def _day(stored: str) -> str:
    # UTCDateTimeAttribute stores ISO-8601 in UTC: its first ten characters are the UTC day.
    return stored[:10]


@invariant("every report figure equals a recount of the items it counts")
class ReportCountersMatchTheTable(StreamingCheck):
    """Per event, the report's day items summed over their slots against the table: standing registrations by
    the day they were made, the people waiting now against joins minus departures, offers by how they ended, and
    the accept-time histogram against each accepted offer's time. Offers called off with their event are counted
    only as made; the offers of an event that started longer ago than ended offers are kept are not recounted.
    Keeps per-event counters, never the items."""

    def __init__(self) -> None:
        self.counted: defaultdict[str, Counter] = defaultdict(Counter)  # event -> (name or (day, name)) -> n
        self.recounted: defaultdict[str, Counter] = defaultdict(Counter)
        self.events: dict[str, str] = {}  # event id -> its start, as stored
        self.now = utcnow()

    def observe(self, item: Item) -> None:
        entity = item.get("entity")
        if entity == "Event":
            self.events[item["event_id"]] = item.get("starts_at", "")
        elif entity == "EventReportDay":
            counted = self.counted[item["event_id"]]
            for name in (*COUNTERS, *ACCEPT_HISTOGRAM):
                amount = int(item.get(name) or 0)
                counted[name] += amount
                if name == REGISTRATIONS:
                    counted[(item["day"], name)] += amount
        elif (entity == "Registration" and Registration.is_user_side(item["PK"])
              and item.get("status") in _STANDING):
            recounted = self.recounted[item["event_id"]]
            recounted[REGISTRATIONS] += 1
            recounted[(_day(item["created_at"]), REGISTRATIONS)] += 1
        elif entity == "WaitlistEntry":
            self.recounted[item["event_id"]]["waiting now"] += 1
        elif entity == "Offer":
            recounted = self.recounted[item["event_id"]]
            recounted[OFFERS_MADE] += 1
            if (ended := OFFER_ENDS.get(item["state"])) is not None:
                recounted[ended] += 1
            if item["state"] == Offer.ACCEPTED:
                took = Offer.ended_at.deserialize(item["ended_at"]) - Offer.offered_at.deserialize(item["offered_at"])
                recounted[accepted_within(took.total_seconds() / 60)] += 1

    def problems(self) -> Iterator[str]:
        for event_id, starts_at in sorted(self.events.items()):
            counted, recounted = self.counted[event_id], self.recounted[event_id]
            counted["waiting now"] = counted[WAITING_JOINED] - counted[WAITING_LEFT]
            skipped = {WAITING_JOINED, WAITING_LEFT}
            if starts_at and Event.starts_at.deserialize(starts_at) + _ENDED_OFFERS_KEPT < self.now:
                # Every offer ended by the start, and ended offers are kept this long: DynamoDB's TTL may have
                # removed some, so only the counters know how those ended.
                skipped |= _OFFER_FIGURES
            for name in sorted({*counted, *recounted} - skipped, key=str):
                if counted[name] != recounted[name]:
                    yield (f"event {event_id}: the report counts {counted[name]} {name}, "
                           f"the table holds {recounted[name]}")
