"""Hi.Events PR #469: a cancelled order did not free its capacity. A student cancels; two others race for the
freed seat."""

from __future__ import annotations

import pytest

from registrations import services
from registrations.models import CONFIRMED
from tests.race import race
from tests.scoreboard import broken
from tests.scoreboard.scenario import TEMS, Report, confirmed, event, no_wait, register, seats_shown, variants

REPORT = Report(
    peer="Hi.Events",
    issue="PR #469",
    url="https://github.com/HiEventsDev/hi.events/pull/469",
    wrong="Cancelling an order did not give its tickets back: the event stayed sold out with a seat nobody held.",
    scenario="One seat, taken; its holder cancels, then two students register at the "
             "same instant: exactly one gets the freed seat, and the seats shown equal a recount.",
    broken="Broken variant: the cancel removes the registration but never gives its seat back.",
)


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_a_cancelled_seat_goes_to_exactly_one_newcomer(ddb, variant):
    open_day = event(capacity=1)
    holder = register(open_day.event_id, "holder").data["registration_id"]
    if variant == TEMS:
        services.registration_cancel(user_id="holder", registration_id=holder, sleep=no_wait)
    else:
        broken.cancel_keeping_the_seat(user_id="holder", registration_id=holder)
    answers = race([lambda n=n: register(open_day.event_id, f"newcomer{n}").data["status"] for n in range(2)])
    assert answers.count(CONFIRMED) == 1, f"the freed seat went to {answers.count(CONFIRMED)} of 2 newcomers"
    assert [r.user_id for r in confirmed(open_day.event_id)] != ["holder"]
    assert seats_shown(open_day.event_id) == len(confirmed(open_day.event_id)) == 1
