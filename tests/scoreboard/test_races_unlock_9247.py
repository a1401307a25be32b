"""unlock #9247: two people with the same QR code at the same moment. Two doors scan one ticket at once."""

from __future__ import annotations

import functools

import pytest

from registrations.checkins import selectors as checkin_selectors
from registrations.checkins import services as checkin_services
from tests.race import WindowHeldOpen, race
from tests.scoreboard import broken
from tests.scoreboard.scenario import TEMS, Report, event, new_key, no_wait, register, variants

REPORT = Report(
    peer="Unlock Protocol",
    issue="#9247",
    url="https://github.com/unlock-protocol/unlock/issues/9247",
    wrong="Two people showing the same QR code at the same moment were both let in.",
    scenario="One signed ticket scanned by two doors at the same instant: one door admits, the other answers "
             "\"already checked in\", and the event counts one check-in.",
    broken="Broken variant: the door reads \"is this ticket checked in?\", then writes.",
)


def tems_door(**scan) -> dict:
    return checkin_services.checkin_create(**scan, sleep=no_wait).data


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_one_ticket_at_two_doors_admits_one_person(ddb, variant):
    open_day = event(capacity=5)
    ticket = register(open_day.event_id, "ann").data["ticket_url"]
    door = tems_door if variant == TEMS else functools.partial(broken.door_read_then_write, window=WindowHeldOpen())
    answers = race([lambda n=n: door(event_id=open_day.event_id, ticket_text=ticket, door=f"door-{n}",
                                     staff_id=f"staff{n}", idempotency_key=new_key(), fingerprint=f"door-{n}")
                    for n in range(2)])
    statuses = sorted(answer["status"] for answer in answers)
    assert statuses == ["already_checked_in", "checked_in"], f"two doors answered {statuses}"
    assert checkin_selectors.checkin_stats(event_id=open_day.event_id)["checked_in"] == 1
