"""Staff message an event's attendees in the browser: preview the count, a double-click on Send sends one
message, and both steps pass axe-core."""

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from registrations import selectors
from registrations.events import services as event_services
from tems.identity import user_key
from tests.browser.helpers import log_in
from tests.browser.pages import DESKTOP, PHONE, new_sized_page, serious_axe_violations
from tests.registrations.helpers import register


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_preview_and_a_double_click_on_send_write_one_message(app_server, browser, contexts, viewport, student,
                                                              staff_user):
    event = event_services.event_create(title="Poster session", starts_at=datetime(2030, 6, 1, 18, tzinfo=UTC),
                                  capacity=1, created_by="staff")
    register(event.event_id, user_key(student), user_name="student1")
    register(event.event_id, "someone-waiting", user_name="waiting1")
    page = new_sized_page(browser, viewport, contexts)
    log_in(page, app_server, "staffer", "pw-staff-1")
    page.goto(f"{app_server}/events/{event.event_id}/")
    page.locator("details.actions-menu > summary").click()  # the event's other actions fold under "More"
    page.get_by_role("link", name="Message attendees").click()
    expect(page.get_by_role("heading", name="Message attendees")).to_be_visible()
    assert serious_axe_violations(page) == []

    page.get_by_label("On the waiting list (1)").check()
    page.get_by_label("Subject").fill("Still hoping?")
    page.get_by_label("Message").fill("A seat may free up on the day.")
    page.get_by_role("button", name="Preview").click()
    send = page.get_by_role("button", name="Send to 1")
    expect(send).to_be_visible()
    expect(page.locator("#message-form .notice")).to_contain_text("This e-mails 1 person")
    assert serious_axe_violations(page) == []

    send.dblclick()
    expect(page.get_by_text("Sending “Still hoping?”")).to_be_visible()
    [message] = selectors.message_list(event_id=event.event_id)
    assert (message.audience, message.subject) == ("waitlisted", "Still hoping?")
    assert serious_axe_violations(page) == []
