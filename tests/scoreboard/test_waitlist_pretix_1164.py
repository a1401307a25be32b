"""pretix #1164: no confirmation of joining the waiting list. A student joins a full event's waiting list, and
the process sending the confirmation dies while sending it."""

from __future__ import annotations

import pytest

from registrations.models import WAITLISTED
from tests.scoreboard import broken
from tests.scoreboard.scenario import (
    TEMS,
    ProcessKilled,
    Report,
    event,
    kill_first_send,
    mails_to,
    register_student,
    relay_surviving_a_kill,
    students,
    variants,
)

REPORT = Report(
    peer="pretix",
    issue="#1164",
    url="https://github.com/pretix/pretix/issues/1164",
    wrong="Joining the waiting list sent no confirmation: people could not tell whether they were on it.",
    scenario="One seat, taken; a student joins the waiting list while the process mailing the confirmation is "
             "killed mid-send; the next relay sends it: the student gets exactly one \"On the waiting list\" "
             "mail.",
    broken="Broken variant: the confirmation mailed by the request after its transaction commits, not through "
           "the outbox.",
)
JOINED = "On the waiting list"


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_joining_the_waiting_list_is_confirmed_once(ddb, db, mailoutbox, monkeypatch, variant):
    holder, joiner = students(2)
    open_day = event(capacity=1)
    if variant != TEMS:
        broken.mails_outside_the_transaction(monkeypatch, {"RegistrationCreated"}, sent="after")
    register_student(open_day.event_id, holder)
    kill_first_send(monkeypatch, JOINED)
    try:
        assert register_student(open_day.event_id, joiner).data["status"] == WAITLISTED
    except ProcessKilled:
        pass  # the request's process died after its commit
    relay_surviving_a_kill()
    confirmations = mails_to(mailoutbox, joiner, JOINED)
    assert len(confirmations) == 1, f"the student got {len(confirmations)} waiting-list confirmation(s)"
