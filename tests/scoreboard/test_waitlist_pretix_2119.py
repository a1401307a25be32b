"""pretix #2119: the waiting-list voucher went to the last person on the list, not the first. Four students
join a full event's waiting list one after another; the holder cancels."""

from __future__ import annotations

import pytest

from registrations import services
from tests.scoreboard import broken
from tests.scoreboard.scenario import TEMS, Report, confirmed, event, no_wait, register, variants, waitlisted

REPORT = Report(
    peer="pretix",
    issue="#2119",
    url="https://github.com/pretix/pretix/issues/2119",
    wrong="A freed place went to the last person on the waiting list instead of the first.",
    scenario="One seat, taken; four students join the waiting list one after another; the holder cancels: the "
             "first to join gets the seat, and the other three keep their order.",
    broken="Broken variant: the waiting list read newest first (a LIFO pick).",
)


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_a_freed_seat_goes_to_the_first_in_line(ddb, monkeypatch, variant):
    if variant != TEMS:
        broken.newest_first(monkeypatch)
    open_day = event(capacity=1)
    holder = register(open_day.event_id, "holder").data["registration_id"]
    line = [f"joiner{n}" for n in range(4)]
    for student in line:
        register(open_day.event_id, student)
    services.registration_cancel(user_id="holder", registration_id=holder, sleep=no_wait)
    seated = [r.user_id for r in confirmed(open_day.event_id)]
    assert seated == [line[0]], f"the freed seat went to {seated}, the first in line was {line[0]}"
    still_waiting = sorted(waitlisted(open_day.event_id), key=lambda entry: int(entry.ticket))
    assert [r.user_id for r in still_waiting] == line[1:]
