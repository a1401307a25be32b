"""Hi.Events #321: capacity counts drifting from the orders they count. Registrations whose write answers are
lost on the way back, retried as the SDK does, then recounted."""

from __future__ import annotations

import pytest

from tests.scoreboard import broken
from tests.scoreboard.scenario import TEMS, Report, confirmed, event, new_key, seats_shown, tems_registration, variants
from tests.support.faults import LOST, Fault, inject

REPORT = Report(
    peer="Hi.Events",
    issue="#321",
    url="https://github.com/HiEventsDev/hi.events/issues/321",
    wrong="Capacity counts drifted from the orders: an SQL recount found 11 attendees where the count said 22.",
    scenario="Four students register while every answer to the write that moves the seat count is lost and "
             "the write is sent again (as the AWS SDK does): the seats shown equal a recount of the stored "
             "registrations, four.",
    broken="Broken variant: the count kept beside the data, moved by a write of its own after the registration.",
)
STUDENTS = 4


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_the_seat_count_equals_a_recount_after_lost_answers(ddb, variant):
    open_day = event(capacity=10)
    technique = tems_registration if variant == TEMS else broken.count_beside_the_data
    # The answer lost, the request really applied, then resent by the SDK: once per write that moves the count.
    with inject(Fault(LOST, operations={"UpdateItem", "TransactWriteItems"}), backoff_scale=0) as faults:
        for n in range(STUDENTS):
            technique(event_id=open_day.event_id, user_id=f"student{n}", idempotency_key=new_key())
    assert faults.fired(LOST)
    recount = len(confirmed(open_day.event_id))
    assert recount == STUDENTS
    assert seats_shown(open_day.event_id) == recount, (
        f"the event shows {seats_shown(open_day.event_id)} seats taken; a recount finds {recount}")
