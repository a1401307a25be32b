"""Staff cancel an event in the browser: the confirmation says how many people are told, a double-click cancels
once, the event page then says so and offers no registration; the flow runs on a phone and each step passes axe-core
at a phone's width and a desktop's."""

from datetime import UTC, datetime

from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations import selectors
from registrations.events import services as event_services
from registrations.messages.models import EventMessage
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


def test_a_double_click_on_the_confirmation_cancels_the_event_once(app_server, browser, contexts, student,
                                                                    staff_user):
    event = event_services.event_create(title="Rooftop astronomy", starts_at=datetime(2030, 6, 1, 21, tzinfo=UTC),
                                  capacity=1, created_by="staff")
    register(event.event_id, user_key(student), user_name="student1")
    register(event.event_id, "someone-waiting", user_name="waiting1")
    page = new_sized_page(browser, PHONE, contexts)
    log_in_as(page, app_server, User.objects.get(username="staffer"))
    page.goto(f"{app_server}/events/{event.event_id}/")
    page.locator("details.actions-menu > summary").click()  # the event's other actions fold under "More"
    page.get_by_role("link", name="Cancel event").click()
    expect(page.get_by_role("heading", name="Cancel this event")).to_be_visible()
    expect(page.locator(".notice")).to_contain_text("This e-mails 2 people")
    # Every impact, so the serious and critical ones too.
    assert axe_violations_at_both_widths(page) + at_both_widths(page, sideways_scroll) == []
    page.get_by_label("Reason (optional)").fill("The telescope is broken.")
    page.get_by_role("button", name="Cancel the event and tell 2").dblclick()
    expect(page.get_by_text("This event is cancelled.")).to_be_visible()
    expect(page.locator(".cancel-reason")).to_contain_text("The telescope is broken.")
    expect(page.get_by_text("“Rooftop astronomy” is cancelled.")).to_be_visible()
    expect(page.get_by_role("link", name="Cancel event")).to_have_count(0)
    assert serious_axe_violations_at_both_widths(page) == []
    assert selectors.event_get(event_id=event.event_id).is_cancelled
    assert [m.kind for m in selectors.message_list(event_id=event.event_id)] == [EventMessage.CANCELLATION]
