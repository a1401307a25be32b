"""The door screen shows the answers staff marked "show at the door" after a scan (Chromium, DynamoDB Local)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import Question, QuestionSet
from tests.browser.helpers import signed_in
from tests.registrations.helpers import make_event, register

pytestmark = pytest.mark.browser

DIET = Question(id="d1e7d1e7", label="Diet", kind="single", choices=("none", "vegan"), door=True)
SECRET = Question(id="5ec5ec5e", label="Staff only note", kind="text")


def test_a_scan_shows_the_door_answers_and_only_those(ddb, browser, live_server, transactional_db):
    event = make_event(title="Gala")
    saved = question_services.questions_update(event_id=event.event_id, expected_version=0, questions=[DIET, SECRET],
                                      updated_by="staff")
    answers = question_sets.parse_answers(questions=QuestionSet(saved.version, (DIET, SECRET)),
                                      given={DIET.id: "vegan", SECRET.id: "not for the door"})
    ticket = register(event.event_id, "ann", answers=answers, questions_version=saved.version).data["ticket_url"]
    staff = User.objects.create_user("staff2", "staff2@uni.test", "pw-staff-2", is_staff=True)
    context = signed_in(browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True),
                        live_server.url, staff)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/events/{event.event_id}/door/")
        page.locator("#ticket-code").fill(ticket)
        page.get_by_role("button", name="Check in", exact=True).click()
        page.locator("#feedback.ok").wait_for(state="visible")
        answers_shown = page.locator(".door-feedback-answers")
        answers_shown.wait_for(state="visible")
        assert answers_shown.inner_text().split("\n") == ["Diet", "vegan"]
    finally:
        context.close()
