"""pretix #3628: a waiting-list voucher not sent "without apparent reason". A seat frees up in offer mode, and
the process sending the offer's mail dies while sending it."""

from __future__ import annotations

import pytest

from registrations import services
from tems.identity import user_key
from tests.scoreboard import broken
from tests.scoreboard.scenario import (
    TEMS,
    ProcessKilled,
    Report,
    event,
    kill_first_send,
    mails_to,
    no_wait,
    register_student,
    relay_surviving_a_kill,
    relay_until_empty,
    students,
    variants,
)

REPORT = Report(
    peer="pretix",
    issue="#3628",
    url="https://github.com/pretix/pretix/issues/3628",
    wrong="A waiting-list voucher was not sent to the person whose turn it was, without apparent reason.",
    scenario="Offer mode, one seat, one student waiting: the holder cancels and the process mailing the offer "
             "is killed mid-send; the next relay sends it: the waiting student gets exactly one offer mail.",
    broken="Broken variant: the offer mailed by the request after its transaction commits, not through the "
           "outbox.",
)
OFFER_MAIL = "A seat is yours"


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_the_offer_mail_survives_a_killed_sender(ddb, db, mailoutbox, monkeypatch, variant):
    holder, waiting = students(2)
    open_day = event(capacity=1, offer_hours=24)
    seat = register_student(open_day.event_id, holder).data["registration_id"]
    register_student(open_day.event_id, waiting)
    relay_until_empty()
    if variant != TEMS:
        broken.mails_outside_the_transaction(monkeypatch, {"SeatOffered"}, sent="after")
    kill_first_send(monkeypatch, OFFER_MAIL)
    try:
        services.registration_cancel(user_id=user_key(holder), registration_id=seat, sleep=no_wait)
    except ProcessKilled:
        pass  # the request's process died after its commit
    relay_surviving_a_kill()
    offers = mails_to(mailoutbox, waiting, OFFER_MAIL)
    assert len(offers) == 1, f"the student whose turn it was got {len(offers)} offer mail(s)"
