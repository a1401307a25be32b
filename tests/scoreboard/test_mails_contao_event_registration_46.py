"""contao-event-registration #46: a second click on a confirmation link sent a false "you are on the waiting
list". A student offered a freed seat clicks Accept twice (two taps, two keys), over the HTTP API."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from registrations import services
from registrations.models import CONFIRMED
from tems.identity import user_key
from tests.scoreboard import broken
from tests.scoreboard.scenario import (
    TEMS,
    Report,
    event,
    mails_to,
    no_wait,
    register_student,
    relay_until_empty,
    students,
    variants,
)

REPORT = Report(
    peer="contao-event-registration",
    issue="#46",
    url="https://github.com/inspiredminds/contao-event-registration/issues/46",
    wrong="Clicking the confirmation link a second time sent a false \"you are on the waiting list\".",
    scenario="Offer mode: a seat frees up and is offered to the first in line, who clicks Accept twice "
             "(`POST /api/offers/<id>/accept`, two keys): both answers say the seat is theirs, the registration "
             "is confirmed, and no mail says otherwise.",
    broken="Broken variant: the accept first reads \"is the offer still open?\" and, when it is not, answers "
           "that the seat went to the next in line.",
)


@pytest.mark.parametrize("variant", variants(REPORT.broken))
def test_a_second_click_on_accept_tells_the_truth(ddb, db, mailoutbox, monkeypatch, variant):
    if variant != TEMS:
        broken.accept_deciding_from_a_read(monkeypatch)
    holder, first_in_line = students(2)
    open_day = event(capacity=1, offer_hours=24)
    seat = register_student(open_day.event_id, holder).data["registration_id"]
    offered = register_student(open_day.event_id, first_in_line).data["registration_id"]
    services.registration_cancel(user_id=user_key(holder), registration_id=seat, sleep=no_wait)
    relay_until_empty()
    assert len(mails_to(mailoutbox, first_in_line, "A seat is yours")) == 1
    mailoutbox.clear()  # what came before the offer (joining the list) was true when sent
    browser = Client()
    browser.force_login(first_in_line)
    clicks = [browser.post(f"/api/offers/{offered}/accept", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
              for _ in range(2)]
    relay_until_empty()
    answers = [(click.status_code, click.json().get("status")) for click in clicks]
    assert answers == [(200, CONFIRMED)] * 2, f"the two clicks were answered {answers}"
    mine = browser.get("/api/me/registrations").json()["registrations"]
    assert [row["status"] for row in mine] == [CONFIRMED]
    false_news = [mail.subject for mail in mailoutbox if first_in_line.email in mail.to
                  and mail.subject.startswith(("On the waiting list", "Seat passed on", "Cancelled"))]
    assert false_news == []
