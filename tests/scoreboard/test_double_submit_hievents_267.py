"""Hi.Events #267: two identical orders from one checkout. A student double-clicks Register (two taps, two
idempotency keys) and both reach the server at once."""

from __future__ import annotations

import pytest

from lab.techniques.registration import naive
from registrations import selectors
from tests.race import WindowHeldOpen, race
from tests.scoreboard.scenario import TEMS, Report, event, new_key, tems_registration, variants

REPORT = Report(
    peer="Hi.Events",
    issue="#267",
    url="https://github.com/HiEventsDev/hi.events/issues/267",
    wrong="One checkout produced two identical orders.",
    scenario="A double click: two Register taps of one student (two keys) at the same instant: one "
             "registration is stored, and both taps are answered with it.",
    broken="Broken variant: the lab's naive technique, \"already registered?\" read first, then the writes.",
)


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_a_double_click_registers_once(ddb, variant):
    open_day = event(capacity=5)
    technique = tems_registration if variant == TEMS else naive
    window = WindowHeldOpen()
    answers = race([lambda: technique(event_id=open_day.event_id, user_id="ann", idempotency_key=new_key(),
                                      pause=window if variant != TEMS else lambda: None)
                    for _ in range(2)])
    stored = [r for r in selectors.registration_list(user_id="ann") if r["event_id"] == open_day.event_id]
    assert len(stored) == 1, f"{len(stored)} registrations stored for one student"
    assert {answer.registration_id for answer in answers} == {stored[0]["registration_id"]}
