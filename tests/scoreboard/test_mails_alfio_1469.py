"""alf.io #1469: duplicate form mails overloading the SMTP server. A staff member's message form reaches the
server three times at once (one tap: the page renders one key with the Send button)."""

from __future__ import annotations

import pytest

from registrations import selectors
from registrations.messages import services as messages
from registrations.models import CONFIRMED
from tems.idempotency import fingerprint
from tests.race import race
from tests.scoreboard import broken
from tests.scoreboard.scenario import (
    TEMS,
    Report,
    event,
    mails_to,
    new_key,
    register_student,
    relay_until_empty,
    students,
    variants,
)

REPORT = Report(
    peer="alf.io",
    issue="#1469",
    url="https://github.com/alfio-event/alf.io/issues/1469",
    wrong="Duplicate form submissions sent duplicate mails, enough to overload the SMTP server.",
    scenario="A staff message to three attendees, its form sent three times at the same instant: one message "
             "is stored and each attendee gets exactly one mail.",
    broken="Broken variant: the message's id drawn fresh per request and no idempotency record, so each "
           "request is a new message.",
)
SUBJECT = "Room change"


def send(event_id: str, key: str):
    payload = {"audience": CONFIRMED, "subject": SUBJECT, "body": "We meet in room 101."}
    return messages.message_send_once(
        event_id=event_id, user_id="staff-key", created_by="staffer", idempotency_key=key,
        fingerprint=fingerprint(method="POST", route=f"/api/events/{event_id}/messages", user_id="staff-key",
                                payload=payload), **payload)


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_a_message_form_sent_three_times_mails_each_attendee_once(ddb, db, mailoutbox, monkeypatch, variant):
    if variant != TEMS:
        broken.message_per_click(monkeypatch)
    attendees = students(3)
    open_day = event(capacity=5)
    for student in attendees:
        register_student(open_day.event_id, student)
    key = new_key()
    race([lambda: send(open_day.event_id, key)] * 3)
    relay_until_empty()
    stored = selectors.message_list(event_id=open_day.event_id, limit=10).items
    per_attendee = {student.username: len(mails_to(mailoutbox, student, SUBJECT)) for student in attendees}
    assert per_attendee == {student.username: 1 for student in attendees}, f"mails per attendee: {per_attendee}"
    assert len(stored) == 1
