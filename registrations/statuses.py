"""The student's own status on each listed event card: Registered / Seat offered / Waiting list #n / Full.

Read in a bounded way: ONE BatchGetItem of the student's claims for the listed events (100 keys a request), not a
read per card; waitlisted claims cost two more for all of them (their positions: counter nodes, lanes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from registrations.events.models import Event
from registrations.models import CONFIRMED, OFFERED, WAITLISTED, RegistrationClaim
from registrations.seating import positions
from registrations.seating.shards import SeatCounts


@dataclass(frozen=True)
class CardStatus:
    kind: str  # "registered" | "offered" | "waitlisted" | "full"
    position: int | None = None

    @property
    def label(self) -> str:
        if self.kind == "registered":
            return "Registered"
        if self.kind == "offered":
            return "Seat offered"
        if self.kind == "waitlisted":
            return f"Waiting list #{self.position}" if self.position else "Waiting list"
        return "Full"


def card_statuses(*, user_id: str, events: Iterable[Event], seats: dict[str, SeatCounts]) -> dict[str, CardStatus]:
    """{event_id: status} for the listed events where the student has one, or the event is full (``seats`` as
    ``seat_counts`` read them for the same page)."""
    events = list(events)
    claims = {claim.event_id: claim for claim in RegistrationClaim.batch_get(
        [RegistrationClaim.key_for(event.event_id, user_id) for event in events])}
    waiting = [(claim.event_id, int(claim.ticket)) for claim in claims.values()
               if claim.status == WAITLISTED and claim.ticket is not None]
    places = positions.positions(tickets=waiting, shard_counts={
        event.event_id: int(event.seat_shards or 0) for event in events}) if waiting else {}
    statuses: dict[str, CardStatus] = {}
    for event in events:
        claim = claims.get(event.event_id)
        if claim is not None and claim.status == CONFIRMED:
            statuses[event.event_id] = CardStatus("registered")
        elif claim is not None and claim.status == OFFERED:
            statuses[event.event_id] = CardStatus("offered")
        elif claim is not None and claim.status == WAITLISTED:
            position = places.get((claim.event_id, int(claim.ticket))) if claim.ticket is not None else None
            statuses[event.event_id] = CardStatus("waitlisted", position)
        elif seats[event.event_id].full:
            statuses[event.event_id] = CardStatus("full")
    return statuses
