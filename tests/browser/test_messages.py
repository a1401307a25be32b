"""Staff message an event's attendees in the browser: preview the count and the mail itself, a double-click on Send
sends one message whose progress the page follows by itself, and every step passes axe-core with no violation. The
flows run on a phone; each page is checked, axe and its fit to the screen, at a phone's width and a desktop's."""

from datetime import UTC, datetime

from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations import selectors
from registrations.events import services as event_services
from registrations.messages import services as messages
from tems import outbox
from tems.identity import user_key
from tests.browser.helpers import log_in_as
from tests.browser.pages import (
    PHONE,
    at_both_widths,
    axe_violations_at_both_widths,
    new_sized_page,
    serious_axe_violations_at_both_widths,
    sideways_scroll,
)
from tests.registrations.helpers import register


def test_preview_and_a_double_click_on_send_write_one_message(app_server, browser, contexts, student, staff_user):
    event = event_services.event_create(title="Poster session", starts_at=datetime(2030, 6, 1, 18, tzinfo=UTC),
                                  capacity=1, created_by="staff")
    register(event.event_id, user_key(student), user_name="student1")
    register(event.event_id, "someone-waiting", user_name="waiting1")
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, User.objects.get(username="staffer"))
    page.goto(f"{app_server}/events/{event.event_id}/")
    page.locator("details.actions-menu > summary").click()  # the event's other actions fold under "More"
    page.get_by_role("link", name="Message attendees").click()
    expect(page.get_by_role("heading", name="Message attendees")).to_be_visible()
    assert serious_axe_violations_at_both_widths(page) == []

    page.get_by_label("On the waiting list (1)").check()
    page.get_by_label("Subject").fill("Still hoping?")
    page.get_by_label("Message").fill("A seat may free up on the day.")
    page.get_by_role("button", name="Preview").click()
    send = page.get_by_role("button", name="Send to 1")
    expect(send).to_be_visible()
    expect(page.locator("#message-form .notice")).to_contain_text("This e-mails 1 person")
    expect(page.locator(".mail-subject")).to_have_text("Poster session: Still hoping?")
    expect(page.locator(".mail-body")).to_contain_text("A seat may free up on the day.\n\n(Sent by the organisers")
    assert axe_violations_at_both_widths(page) + at_both_widths(page, sideways_scroll) == []

    send.dblclick()
    expect(page.get_by_text("Sending “Still hoping?”")).to_be_visible()
    [message] = selectors.message_list(event_id=event.event_id)
    assert (message.audience, message.subject) == ("waitlisted", "Still hoping?")
    expect(page.locator("#sent-list")).to_contain_text("0 so far (sending…)")
    assert axe_violations_at_both_widths(page) + at_both_widths(page, sideways_scroll) == []
    outbox.outbox_relay()  # the relay fans it out; the page polls and shows it done, no reload
    expect(page.locator("#sent-list")).to_contain_text("1, done", timeout=10_000)
    expect(page.locator("#sent-list")).not_to_have_attribute("hx-trigger", "every 2s")


def test_a_student_reads_the_messages_sent_to_them_on_the_event_page(app_server, browser, contexts, student):
    event = event_services.event_create(title="Printmaking", starts_at=datetime(2030, 6, 2, 18, tzinfo=UTC),
                                        capacity=3, created_by="staff")
    register(event.event_id, user_key(student), user_name="student1")
    messages.message_send_once(event_id=event.event_id, user_id="staff-key", created_by="staffer",
                               idempotency_key="a-key", fingerprint="fp", audience="confirmed",
                               subject="Wear old clothes", body="Ink stains.\nAprons are at the door.")
    outbox.outbox_relay()
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, User.objects.get(username="student1"))
    page.goto(f"{app_server}/events/{event.event_id}/")
    expect(page.get_by_role("heading", name="Messages to you")).to_be_visible()
    page.get_by_text("Wear old clothes").click()
    expect(page.get_by_text("Aprons are at the door.")).to_be_visible()
    assert axe_violations_at_both_widths(page) + at_both_widths(page, sideways_scroll) == []
