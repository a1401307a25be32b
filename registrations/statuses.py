"""What a student is told about a registration, decided in one place: ``registration_standing``.

The event card, the event page, My registrations, the mails, the calendar file and feed and the API all ask it, so
no surface can say "confirmed" of a seat at an event called off, or show a ticket nobody will scan.

The cards' statuses are read in a bounded way: ONE BatchGetItem of the student's claims for the listed events (100
keys a request), not a read per card; waitlisted claims cost two more for all of them (their positions: counter
nodes, lanes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.utils.timesince import timeuntil

from registrations.events.models import Event
from registrations.models import CANCELLED, CONFIRMED, OFFERED, WAITLISTED, RegistrationClaim
from registrations.seating import positions
from registrations.seating.shards import SeatCounts
from tems.clock import utcnow
from tems.templatetags.when import when_text

CHECKED_IN = "checked_in"
EVENT_CANCELLED = "event_cancelled"


@dataclass(frozen=True)
class Standing:
    """A registration as its student is told it: ``kind`` (confirmed, checked_in, waitlisted, offered, cancelled,
    event_cancelled), a short ``label`` (the pill), a sentence of ``detail``, and what the surfaces may offer."""

    kind: str
    label: str
    detail: str
    position: int | None = None
    offer_ends: datetime | None = None
    note: str = ""  # a waiting student's detail after their place, for a page that marks the place up

    @property
    def shows_ticket(self) -> bool:
        """A QR code and "show it at the door": only for a seat at an event that goes ahead, not yet used."""
        return self.kind == CONFIRMED

    @property
    def calendar_status(self) -> str:
        """The calendar entry's STATUS (RFC 5545): a place not yet a seat is TENTATIVE."""
        if self.kind in (CONFIRMED, CHECKED_IN):
            return "CONFIRMED"
        if self.kind in (WAITLISTED, OFFERED):
            return "TENTATIVE"
        return "CANCELLED"

    @property
    def offers_calendar(self) -> bool:
        """Whether "Add to calendar" is offered: a seat, or a place in line (tentative); an offer is accepted
        first, and a cancelled one has nothing to add."""
        return self.kind in (CONFIRMED, CHECKED_IN, WAITLISTED)

    @property
    def can_cancel(self) -> bool:
        """Cancel or leave the line: an offer is declined instead, and a cancelled event has nothing to give up."""
        return self.kind in (CONFIRMED, WAITLISTED)

    @property
    def is_live(self) -> bool:
        return self.kind not in (CANCELLED, EVENT_CANCELLED)


def waiting_rule(event: Event | None) -> str:
    """How a freed seat reaches the waiting list of ``event``, said before joining, while waiting and in mails."""
    if event is not None and event.offers_seats:
        hours = int(event.offer_hours)
        return (f"When a seat frees up it is offered to the first in line by e-mail, who then has {hours} hour"
                f"{'s' if hours != 1 else ''} to accept it; a seat not accepted in time is offered to the next.")
    return ("When a seat frees up it goes at once to the first in line, who is told by e-mail; nobody needs to "
            "accept it.")


def waiting_next(event: Event | None) -> str:
    """What a student who just joined the waiting list of ``event`` does next, in the event's mode (the mails)."""
    if event is not None and event.offers_seats:
        return ("watch your inbox. " + waiting_rule(event) + " When it is your turn, accept the seat by the "
                "link in the mail or on the event page.")
    return ("you need do nothing. " + waiting_rule(event) + " When a seat is yours we e-mail you at once and "
            "your ticket is on the event page.")


def _waiting_note(event: Event | None) -> str:
    """After a waiting student's place: what happens when a seat frees up, in the event's mode."""
    if event is not None and event.offers_seats:
        hours = int(event.offer_hours)
        return (f"When it is your turn we e-mail you, and you have {hours} hour{'s' if hours != 1 else ''} to "
                "accept the seat before it is offered to the next person.")
    return "You need do nothing now: when a seat is yours we e-mail you and your ticket appears here."


def offer_detail(ends: datetime, *, now: datetime | None = None) -> str:
    """An open offer's deadline with its date, time, zone and the time left."""
    return (f"A seat is yours until {when_text(ends)} ({timeuntil(ends, now or utcnow())} left). Accept it, or "
            "decline so the next in line gets it.")


def registration_standing(*, status: str, event: Event | None, position: int | None = None,
                          offer_ends: datetime | None = None, checked_in: bool = False,
                          now: datetime | None = None) -> Standing:
    """What the student is told of a registration in ``status`` for ``event`` (None: the event is gone).

    The student's own cancellation wins, then the event's; a used ticket is "checked in"; an offer names its end.
    """
    if status == CANCELLED:
        return Standing(CANCELLED, "Cancelled", "You cancelled this registration.")
    if event is None or event.is_cancelled:
        what = "seat" if status in (CONFIRMED, OFFERED) else "place on the waiting list"
        return Standing(EVENT_CANCELLED, "Event cancelled",
                        f"The organisers cancelled this event: your {what} no longer stands and there is "
                        "nothing you need to do.")
    if status == CONFIRMED and checked_in:
        return Standing(CHECKED_IN, "Checked in", "Your ticket was scanned at the door.")
    if status == CONFIRMED:
        return Standing(CONFIRMED, "Confirmed", "You have a seat.")
    if status == OFFERED:
        detail = (offer_detail(offer_ends, now=now) if offer_ends is not None
                  else "A seat is held for you: accept it, or decline so the next in line gets it.")
        return Standing(OFFERED, "Seat offered", detail, offer_ends=offer_ends)
    label = f"Waiting list #{position}" if position else "Waiting list"
    place = f"You are number {position} in line." if position else "You are on the waiting list."
    note = _waiting_note(event)
    return Standing(WAITLISTED, label, f"{place} {note}", position=position, note=note)


@dataclass(frozen=True)
class CardStatus:
    """The pill on an event card: the student's standing, or "Full" for an event they have no place at (its
    ``kind`` picks the pill's colour, as on every other page: templates/registrations/_tone.html)."""

    kind: str
    label: str


FULL = CardStatus("full", "Full")


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
        if claim is not None:
            position = (places.get((claim.event_id, int(claim.ticket)))
                        if claim.status == WAITLISTED and claim.ticket is not None else None)
            standing = registration_standing(status=claim.status, event=event, position=position)
            statuses[event.event_id] = CardStatus(standing.kind, standing.label)
        elif event.is_cancelled:
            statuses[event.event_id] = CardStatus(EVENT_CANCELLED, "Event cancelled")
        elif seats[event.event_id].full:
            statuses[event.event_id] = FULL
    return statuses
