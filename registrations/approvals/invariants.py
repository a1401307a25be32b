"""A draft admits nobody and is found by nobody; a published event is neither (registered by
``registrations.invariants``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from registrations.events.models import Event, EventFacet
from tems.invariants import Item, StreamingCheck, invariant


@invariant("a draft admits nobody and no search finds it: every seat shard carries the draft mark, no finding aid "
           "exists, and a published event's shards carry no mark")
class DraftsMarked(StreamingCheck):
    """Per event: its state and shard count, which of its shards carry the draft mark, and whether a facet of it
    exists. Keeps per-event sets only."""

    def __init__(self) -> None:
        self.events: dict[str, tuple[bool, int, str]] = {}  # event id -> (draft, shard count, listing)
        self.marked: dict[str, set[int]] = defaultdict(set)
        self.faceted: set[str] = set()

    def observe(self, item: Item) -> None:
        entity = item.get("entity")
        if entity == "Event":
            self.events[item["event_id"]] = (item.get("state") == Event.DRAFT, int(item.get("seat_shards") or 0),
                                             item.get("GSI1PK", ""))
        elif entity == "SeatShard" and item.get("draft"):
            self.marked[item["event_id"]].add(int(item["shard"]))
        elif entity == "EventFacet" and item["SK"].startswith(EventFacet.SK_PREFIX):
            self.faceted.add(item["event_id"])

    def problems(self) -> Iterator[str]:
        for event_id, (draft, count, listing) in sorted(self.events.items()):
            where = Event.pk_for(event_id)
            if draft:
                unmarked = sorted(set(range(count)) - self.marked[event_id])
                if unmarked:
                    yield f"{where}: a draft, but seat shards {unmarked} do not carry the draft mark"
                if event_id in self.faceted:
                    yield f"{where}: a draft with finding aids: a search would find it"
                if listing != Event.DRAFTS:
                    yield f"{where}: a draft listed under {listing!r}, not among the drafts"
            elif self.marked[event_id]:
                yield f"{where}: published, but seat shards {sorted(self.marked[event_id])} still carry the draft mark"
            elif listing == Event.DRAFTS:
                yield f"{where}: published, but still listed among the drafts"
