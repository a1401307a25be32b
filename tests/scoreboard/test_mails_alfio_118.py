"""alf.io #118: every ticket mailed twice. Three students register, and two relay processes run at once."""

from __future__ import annotations

import pytest

from tems import outbox
from tests.race import WindowHeldOpen, race
from tests.scoreboard import broken
from tests.scoreboard.scenario import (
    TEMS,
    Report,
    event,
    mails_to,
    register_student,
    relay_until_empty,
    students,
    variants,
)

REPORT = Report(
    peer="alf.io",
    issue="#118",
    url="https://github.com/alfio-event/alf.io/issues/118",
    wrong="Every ticket was sent twice by e-mail.",
    scenario="Three students register; two relays deliver the outbox at the same instant: each student gets "
             "exactly one ticket mail.",
    broken="Broken variant: a relay that lists what is due, sends it and deletes it, without leasing a "
           "message first.",
)


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_two_relays_mail_each_ticket_once(ddb, transactional_db, mailoutbox, variant):
    # transactional_db: the relays' threads read the accounts through connections of their own.
    attendees = students(3)
    open_day = event(capacity=5)
    for student in attendees:
        register_student(open_day.event_id, student)
    window = WindowHeldOpen()
    relay = outbox.outbox_relay if variant == TEMS else lambda: broken.relay_without_leases(window)
    race([relay, relay])
    relay_until_empty()  # whatever a relay left behind is delivered too
    tickets = {student.username: len(mails_to(mailoutbox, student, "Registered:")) for student in attendees}
    assert tickets == {student.username: 1 for student in attendees}, f"ticket mails per student: {tickets}"
