"""Staff cancel an event in the browser: the confirmation says how many people are told, a double-click cancels
once, the event page then says so and offers no registration; each step passes axe-core."""

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from registrations import selectors
from registrations.events import services as event_services
from registrations.messages.models import EventMessage
from tems.identity import user_key
from tests.browser.helpers import log_in
from tests.browser.pages import DESKTOP, PHONE, axe_violations, fits_the_width, new_sized_page, serious_axe_violations
from tests.registrations.helpers import register


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_double_click_on_the_confirmation_cancels_the_event_once(app_server, browser, contexts, viewport, student,
                                                                    staff_user):
    event = event_services.event_create(title="Rooftop astronomy", starts_at=datetime(2030, 6, 1, 21, tzinfo=UTC),
                                  capacity=1, created_by="staff")
    register(event.event_id, user_key(student), user_name="student1")
    register(event.event_id, "someone-waiting", user_name="waiting1")
    page = new_sized_page(browser, viewport, contexts)
    log_in(page, app_server, "staffer", "pw-staff-1")
    page.goto(f"{app_server}/events/{event.event_id}/")
    page.locator("details.actions-menu > summary").click()  # the event's other actions fold under "More"
    page.get_by_role("link", name="Cancel event").click()
    expect(page.get_by_role("heading", name="Cancel this event")).to_be_visible()
    expect(page.locator(".notice")).to_contain_text("This e-mails 2 people")
    assert serious_axe_violations(page) == []

    assert axe_violations(page) == [] and fits_the_width(page)
    page.get_by_label("Reason (optional)").fill("The telescope is broken.")
    page.get_by_role("button", name="Cancel the event and tell 2").dblclick()
    expect(page.get_by_text("This event is cancelled.")).to_be_visible()
    expect(page.locator(".cancel-reason")).to_contain_text("The telescope is broken.")
    expect(page.get_by_text("“Rooftop astronomy” is cancelled.")).to_be_visible()
    expect(page.get_by_role("link", name="Cancel event")).to_have_count(0)
    assert serious_axe_violations(page) == []
    assert selectors.event_get(event_id=event.event_id).is_cancelled
    assert [m.kind for m in selectors.message_list(event_id=event.event_id)] == [EventMessage.CANCELLATION]
