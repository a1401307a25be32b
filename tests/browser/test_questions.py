"""Custom questions in Chromium (DynamoDB Local): staff write several questions in the editor (choices only for
the kinds that have them, reordered, previewed as a student sees them), a student is told what is missing without
losing what they typed, registers with answers, and staff see them; questions are also asked on the New event
form. The flows run on a phone; every page is axe-clean (no violation at all on the editor's pages) and the editor's
fit the screen, each checked at a phone's width and a desktop's."""

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from registrations.events import services as event_services
from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import Question
from tests.browser.helpers import log_in_as
from tests.browser.pages import (
    PHONE,
    at_both_widths,
    axe_violations_at_both_widths,
    new_sized_page,
    serious_axe_violations_at_both_widths,
    sideways_scroll,
)

pytestmark = pytest.mark.browser


def test_staff_ask_a_question_and_a_student_answers_it(app_server, browser, contexts, student, staff_user):
    question_sets.known.reset()
    event = event_services.event_create(title="Question night", starts_at=datetime(2030, 6, 1, 18, tzinfo=UTC),
                                  capacity=5, created_by="staff")
    question_services.questions_update(event_id=event.event_id, expected_version=0, updated_by="staff", questions=[
        Question(id="0a0b0c0d", label="Anything we should know?", kind="text")])
    checked: dict[str, list[str]] = {}

    staff = new_sized_page(browser, PHONE, contexts)
    log_in_as(staff, app_server, staff_user)
    staff.goto(f"{app_server}/events/{event.event_id}/questions/")
    checked["questions page"] = axe_violations_at_both_widths(staff) + at_both_widths(staff, sideways_scroll)
    expect(staff.locator("#id_questions-0-choices")).to_be_hidden()  # a text question has no choices
    staff.locator("#id_questions-1-label").fill("Diet")
    staff.locator("#id_questions-1-kind").select_option("single")
    expect(staff.locator("#id_questions-1-choices")).to_be_visible()
    staff.locator("#id_questions-1-choices").fill("none\nvegan")
    staff.locator("#id_questions-1-required").check()
    staff.locator("#id_questions-1-door").check()
    staff.locator("#id_questions-2-label").fill("T-shirt size")
    staff.get_by_role("button", name="Move up (question 2)").click()
    expect(staff.locator("#id_questions-0-label")).to_have_value("Diet")  # moved, and nothing lost
    expect(staff.locator("#id_questions-2-label")).to_have_value("T-shirt size")
    staff.get_by_role("button", name="Preview as a student").click()
    preview = staff.locator(".questions-preview")
    expect(preview.get_by_role("heading", name="What a student sees")).to_be_visible()
    expect(preview.get_by_label("vegan")).to_be_disabled()
    checked["questions preview"] = axe_violations_at_both_widths(staff) + at_both_widths(staff, sideways_scroll)
    staff.get_by_role("button", name="Save questions").click()
    expect(staff.get_by_text("Saved the questions.")).to_be_visible()
    assert [q.label for q in question_sets.questions_get(event_id=event.event_id).questions] == [
        "Diet", "Anything we should know?", "T-shirt size"]

    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, student)
    page.goto(f"{app_server}/events/{event.event_id}/")
    checked["event page with questions"] = serious_axe_violations_at_both_widths(page)
    page.get_by_label("Anything we should know?").fill("I use a wheelchair")
    # The browser's own check would stop the post first: a server refusal is what is tested here.
    page.evaluate("document.querySelector('form.register-form').noValidate = true")
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".panel-notice")).to_contain_text("“Diet” is required.")
    expect(page.get_by_label("Anything we should know?")).to_have_value("I use a wheelchair")
    checked["event page, an answer missing"] = serious_axe_violations_at_both_widths(page)
    page.get_by_label("vegan").check()
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".panel-notice")).to_contain_text("You are registered for “Question night”.")

    staff.goto(f"{app_server}/events/{event.event_id}/attendees/")
    expect(staff.locator("td.answers")).to_contain_text("Diet: vegan")
    expect(staff.locator("td.answers")).to_contain_text("I use a wheelchair")
    checked["attendee list with answers"] = serious_axe_violations_at_both_widths(staff)
    failures = {name: found for name, found in checked.items() if found}
    assert failures == {}, failures


def test_the_new_event_form_creates_the_event_with_its_questions(app_server, browser, contexts, staff_user):
    question_sets.known.reset()
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, staff_user)
    page.goto(f"{app_server}/events/new/")
    assert axe_violations_at_both_widths(page) + at_both_widths(page, sideways_scroll) == []
    page.get_by_label("Title").fill("Robot workshop")
    page.get_by_label("Starts").fill("2030-07-01T14:00")
    page.get_by_label("Capacity").fill("12")
    page.locator("#id_questions-0-label").fill("Laptop OS")
    page.locator("#id_questions-0-kind").select_option("multiple")
    page.locator("#id_questions-0-choices").fill("Linux\nmacOS\nWindows")
    page.get_by_role("button", name="Preview as a student").click()
    expect(page.locator(".questions-preview").get_by_label("Windows")).to_be_visible()
    expect(page.get_by_label("Title")).to_have_value("Robot workshop")
    assert axe_violations_at_both_widths(page) + at_both_widths(page, sideways_scroll) == []
    page.get_by_role("button", name="Create event").click()
    expect(page.get_by_role("heading", name="Robot workshop")).to_be_visible()
    event_id = page.url.rstrip("/").split("/")[-1]
    stored = question_sets.questions_get(event_id=event_id)
    assert stored.version == 1 and [(q.label, q.choices) for q in stored.questions] == [
        ("Laptop OS", ("Linux", "macOS", "Windows"))]
