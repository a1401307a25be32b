"""Event Espresso core #109: 10 tickets oversold by 2. Twelve students register at once for ten seats."""

from __future__ import annotations

import pytest

from tests.race import WindowHeldOpen, race
from tests.scoreboard import broken
from tests.scoreboard.scenario import (
    TEMS,
    Report,
    confirmed,
    event,
    new_key,
    seats_shown,
    tems_registration,
    variants,
    waitlisted,
)

REPORT = Report(
    peer="Event Espresso",
    issue="core #109",
    url="https://github.com/eventespresso/event-espresso-core/issues/109",
    wrong="An event limited to 10 tickets sold 12: the \"sold\" count lagged behind the registrations it should "
          "have counted.",
    scenario="Ten seats, twelve students register at the same instant: exactly ten are confirmed, two wait in "
             "line, and the seats shown equal a recount of the stored registrations.",
    broken="Broken variant: the sold count read, checked and written back as read + 1, beside the "
           "registrations.",
)
SEATS, STUDENTS = 10, 12


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_ten_seats_are_never_sold_twelve_times(ddb, variant):
    open_day = event(capacity=SEATS)
    technique = tems_registration if variant == TEMS else broken.count_read_then_written
    window = WindowHeldOpen()
    race([lambda n=n: technique(event_id=open_day.event_id, user_id=f"student{n}", idempotency_key=new_key(),
                                pause=window if variant != TEMS else lambda: None)
          for n in range(STUDENTS)])
    seated = confirmed(open_day.event_id)
    assert len(seated) == SEATS, f"{len(seated)} registrations confirmed for {SEATS} seats"
    assert seats_shown(open_day.event_id) == len(seated)
    assert len(waitlisted(open_day.event_id)) == STUDENTS - SEATS
