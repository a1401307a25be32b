"""Attendize #473: the last ticket ordered several times. Six students tap Register on the last seat at once."""

from __future__ import annotations

import pytest

from lab.techniques.registration import check_then_take
from tests.race import WindowHeldOpen, race
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
    peer="Attendize",
    issue="#473",
    url="https://github.com/Attendize/Attendize/issues/473",
    wrong="The last ticket of an event was ordered several times: each buyer's check for a free ticket passed "
          "before any order was written.",
    scenario="One seat left, six students tap Register at the same instant: exactly one is confirmed, five wait "
             "in line, and the event shows one seat taken.",
    broken="Broken variant: \"is a seat left?\" read first, then the registration and the count written "
           "without a condition (the lab's check-then-take, which its page runs live).",
)
STUDENTS = 6


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_the_last_seat_goes_to_exactly_one_of_six_simultaneous_taps(ddb, variant):
    open_day = event(capacity=1)
    technique = tems_registration if variant == TEMS else check_then_take
    window = WindowHeldOpen()
    race([lambda n=n: technique(event_id=open_day.event_id, user_id=f"student{n}", idempotency_key=new_key(),
                                pause=window if variant != TEMS else lambda: None)
          for n in range(STUDENTS)])
    seated = confirmed(open_day.event_id)
    assert len(seated) == 1, f"{len(seated)} students confirmed for 1 seat"
    if variant == TEMS:
        assert len(waitlisted(open_day.event_id)) == STUDENTS - 1
    assert seats_shown(open_day.event_id) == 1
