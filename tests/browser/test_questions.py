"""Custom questions in Chromium (DynamoDB Local): staff add one on the questions page, a student is told what is
missing without losing what they typed, registers with answers, and staff see them; every page axe-clean."""

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from registrations.events import services as event_services
from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import Question
from tests.browser.helpers import log_in
from tests.browser.pages import DESKTOP, PHONE, new_sized_page, serious_axe_violations

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_staff_ask_a_question_and_a_student_answers_it(app_server, browser, contexts, viewport, student, staff_user):
    question_sets.known.reset()
    event = event_services.event_create(title="Question night", starts_at=datetime(2030, 6, 1, 18, tzinfo=UTC),
                                  capacity=5, created_by="staff")
    question_services.questions_update(event_id=event.event_id, expected_version=0, updated_by="staff", questions=[
        Question(id="0a0b0c0d", label="Anything we should know?", kind="text")])
    checked: dict[str, list[str]] = {}

    staff = new_sized_page(browser, viewport, contexts)
    log_in(staff, app_server, "staffer", "pw-staff-1")
    staff.goto(f"{app_server}/events/{event.event_id}/questions/")
    checked["questions page"] = serious_axe_violations(staff)
    staff.locator("#label-new").fill("Diet")
    staff.locator("#kind-new").select_option("single")
    staff.locator("#choices-new").fill("none\nvegan")
    staff.locator("input[name=required-new]").check()
    staff.locator("input[name=door-new]").check()
    staff.get_by_role("button", name="Save questions").click()
    expect(staff.get_by_text("Saved the questions.")).to_be_visible()

    page = new_sized_page(browser, viewport, contexts)
    log_in(page, app_server, "student1", "pw-student-1")
    page.goto(f"{app_server}/events/{event.event_id}/")
    checked["event page with questions"] = serious_axe_violations(page)
    page.get_by_label("Anything we should know?").fill("I use a wheelchair")
    # The browser's own check would stop the post first: a server refusal is what is tested here.
    page.evaluate("document.querySelector('form.register-form').noValidate = true")
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".panel-notice")).to_contain_text("“Diet” is required.")
    expect(page.get_by_label("Anything we should know?")).to_have_value("I use a wheelchair")
    checked["event page, an answer missing"] = serious_axe_violations(page)
    page.get_by_label("vegan").check()
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".panel-notice")).to_contain_text("You are registered for “Question night”.")

    staff.goto(f"{app_server}/events/{event.event_id}/attendees/")
    expect(staff.locator("td.answers")).to_contain_text("Diet: vegan")
    expect(staff.locator("td.answers")).to_contain_text("I use a wheelchair")
    checked["attendee list with answers"] = serious_axe_violations(staff)
    failures = {name: found for name, found in checked.items() if found}
    assert failures == {}, failures
