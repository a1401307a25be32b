"""ESP-Website #18: the confirmation mail went out, but no registration was stored. The database refuses the
registration's write after the mail's moment."""

from __future__ import annotations

import pytest

from tests.scoreboard import broken
from tests.scoreboard.scenario import (
    TEMS,
    Report,
    confirmed,
    event,
    mails_to,
    register_student,
    relay_until_empty,
    students,
    variants,
)
from tests.support.faults import ERROR, Fault, inject

REPORT = Report(
    peer="ESP-Website (Learning Unlimited)",
    issue="#18",
    url="https://github.com/learning-unlimited/ESP-Website/issues/18",
    wrong="A student got the registration confirmation e-mail, but no registration had been stored.",
    scenario="A student registers while the database fails the registration's write every time (the SDK gives "
             "up): no mail and no registration; the student taps again once it is back: one registration, one "
             "mail. Mails always match what is stored.",
    broken="Broken variant: the confirmation mailed by the request before its transaction commits.",
)


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_no_confirmation_mail_without_a_stored_registration(ddb, db, mailoutbox, monkeypatch, variant):
    if variant != TEMS:
        broken.mails_outside_the_transaction(monkeypatch, {"RegistrationCreated"}, sent="before")
    [ann] = students(1)
    open_day = event(capacity=5)
    with inject(Fault(ERROR, operations={"TransactWriteItems"}, final_attempt_too=True), backoff_scale=0):
        with pytest.raises(Exception):  # noqa: B017 - whatever the app answers, the write did not happen
            register_student(open_day.event_id, ann)
    relay_until_empty()
    assert (len(mails_to(mailoutbox, ann, "Registered:")), len(confirmed(open_day.event_id))) == (0, 0), (
        f"{len(mails_to(mailoutbox, ann, 'Registered:'))} confirmation mail(s) for "
        f"{len(confirmed(open_day.event_id))} stored registrations")
    register_student(open_day.event_id, ann)
    relay_until_empty()
    assert (len(mails_to(mailoutbox, ann, "Registered:")), len(confirmed(open_day.event_id))) == (1, 1)
