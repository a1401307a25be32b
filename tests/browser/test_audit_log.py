"""The audit log's pages in Chromium, run on a phone: an event manager raises a capacity and looks at the
attendees, the event's log says so in words ("raised the capacity from 40 to 60"), its filters work and a bad filter
is a readable 400; the team admin reads the team's log (both parts) and sets its retention, a bad number refused.
Every page on the way has no axe-core violation (WCAG 2.2 A/AA, every impact) at a phone's width and a desktop's,
error states included."""

from datetime import UTC, datetime

from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations.events import services as event_services
from tems.models import Membership, Team
from tems.roles import EVENT_MANAGER, TEAM_ADMIN
from tests.browser.helpers import log_in_as
from tests.browser.pages import PHONE, axe_violations_at_both_widths, new_sized_page


def test_log_pages_read_in_words_and_have_no_axe_violation(app_server, browser, contexts):
    team = Team.objects.create(id="chem", name="Chemistry Society")
    mia = User.objects.create_user("mia", password="pw-mia-1", first_name="Mia", last_name="Manager")
    ada = User.objects.create_user("ada", password="pw-ada-1", first_name="Ada")
    Membership.objects.create(user=mia, team=team, role=EVENT_MANAGER)
    Membership.objects.create(user=ada, team=team, role=TEAM_ADMIN)
    event = event_services.event_create(title="Spectra night", starts_at=datetime(2030, 5, 1, 18, tzinfo=UTC),
                                        capacity=40, created_by="mia", team="chem")
    checked: dict[str, list[str]] = {}

    manager = new_sized_page(browser, PHONE, contexts)
    log_in_as(manager, app_server, mia)
    manager.goto(f"{app_server}/events/{event.event_id}/edit/")
    manager.get_by_label("Capacity").fill("60")
    manager.get_by_role("button", name="Save").click()
    expect(manager).to_have_url(f"{app_server}/events/{event.event_id}/", timeout=15_000)
    manager.goto(f"{app_server}/events/{event.event_id}/attendees/")
    manager.goto(f"{app_server}/events/{event.event_id}/")
    manager.locator("summary", has_text="More").click()
    manager.get_by_role("link", name="Log").click()
    log = manager.locator(".audit-log")
    expect(log).to_contain_text("Mia Manager")
    expect(log).to_contain_text("raised the capacity from 40 to 60")
    expect(log).to_contain_text("viewed the attendee list")
    checked["event log"] = axe_violations_at_both_widths(manager)
    manager.get_by_label("What").select_option(label="Changed an event")
    manager.get_by_role("button", name="Show").click()
    expect(log).to_contain_text("raised the capacity")
    expect(log).not_to_contain_text("viewed the attendee list")
    checked["event log, filtered"] = axe_violations_at_both_widths(manager)
    answer = manager.goto(f"{app_server}/events/{event.event_id}/log/?action=nonsense&actor=%3Cscript%3E")
    assert answer.status == 400
    expect(manager.get_by_role("alert")).to_contain_text("Choose")
    checked["event log, refused"] = axe_violations_at_both_widths(manager)

    admin = new_sized_page(browser, PHONE, contexts)
    log_in_as(admin, app_server, ada)
    admin.goto(f"{app_server}/teams/chem/")
    days = admin.get_by_label("Keep the log for (days)")
    days.evaluate("field => field.removeAttribute('min')")  # past the browser's own check, to the server's
    days.fill("5")
    admin.get_by_role("button", name="Save").click()
    expect(admin.locator(".field-error")).to_be_visible()
    checked["team, retention refused"] = axe_violations_at_both_widths(admin)
    admin.get_by_label("Keep the log for (days)").fill("90")
    admin.get_by_role("button", name="Save").click()
    expect(admin.locator(".messages")).to_contain_text("90 days")
    admin.get_by_role("link", name="The team’s log").click()
    expect(admin.locator(".audit-log")).to_contain_text("raised the capacity from 40 to 60")
    checked["team log"] = axe_violations_at_both_widths(admin)
    admin.get_by_role("link", name="Members and settings").click()
    expect(admin.locator(".audit-log")).to_contain_text("set the log to keep entries for 90 days")
    checked["team log, the team's own"] = axe_violations_at_both_widths(admin)

    failures = {name: found for name, found in checked.items() if found}
    assert failures == {}, "\n".join(f"{name}: {found}" for name, found in failures.items())
