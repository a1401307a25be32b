"""pretix #1238: waiting-list vouchers sent beyond a sold-out quota. An offered seat's time runs out while three
relays sweep the expired offers at the same instant."""

from __future__ import annotations

from datetime import timedelta

import pytest

from registrations import services
from registrations.models import CONFIRMED, OFFERED
from registrations.offers import services as offer_services
from tems.clock import utcnow
from tems.identity import user_key
from tests.race import WindowHeldOpen, race
from tests.scoreboard import broken
from tests.scoreboard.scenario import (
    TEMS,
    Report,
    event,
    mails_to,
    no_wait,
    register_student,
    registrations_by_status,
    relay_until_empty,
    seats_shown,
    students,
    variants,
)

REPORT = Report(
    peer="pretix",
    issue="#1238",
    url="https://github.com/pretix/pretix/issues/1238",
    wrong="The waiting list sent 60 vouchers for a quota that was already sold out.",
    scenario="Offer mode, two seats, both taken, four waiting: one holder cancels and the seat is offered to "
             "the first in line; the offer runs out and three relays sweep at the same instant: exactly one new "
             "offer goes out (to the next in line), and never more seats are held than the event has.",
    broken="Broken variant: the sweep hands an offer on from what it read, its writes sent without their "
           "conditions.",
)
OFFER_MAIL = "A seat is yours"


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_an_expired_offer_is_handed_on_once_however_many_relays_sweep(ddb, db, mailoutbox, monkeypatch, variant):
    first, second, *line = students(6)
    open_day = event(capacity=2, offer_hours=24)
    seat = register_student(open_day.event_id, first).data["registration_id"]
    register_student(open_day.event_id, second)
    for student in line:
        register_student(open_day.event_id, student)
    services.registration_cancel(user_id=user_key(first), registration_id=seat, sleep=no_wait)
    relay_until_empty()
    assert [len(mails_to(mailoutbox, student, OFFER_MAIL)) for student in line] == [1, 0, 0, 0]
    mailoutbox.clear()
    ended = utcnow() + timedelta(hours=25)
    with monkeypatch.context() as sweeping:  # the relays' sweep only: the relay that mails is TEMS's
        if variant != TEMS:
            broken.conditions_dropped(sweeping, WindowHeldOpen())
        race([lambda: offer_services.offers_sweep(now=ended)] * 3)
    relay_until_empty(now=lambda: ended)  # the relay runs on the sweep's clock
    offers = [len(mails_to(mailoutbox, student, OFFER_MAIL)) for student in line]
    assert offers == [0, 1, 0, 0], f"offer mails after the expiry, in line order: {offers}"
    held = registrations_by_status(open_day.event_id)
    assert len(held.get(CONFIRMED, [])) + len(held.get(OFFERED, [])) == 2 == seats_shown(open_day.event_id)
