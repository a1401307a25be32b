"""The team pages in Chromium, run on a phone: a platform admin creates a team naming its admin, the team admin
adds a door volunteer and assigns them to an event, and the volunteer's event page leads to its door. Every page
on the way has no axe-core violation at all (WCAG 2.2 A/AA, every impact) at a phone's width and a desktop's, error
states included."""

from datetime import UTC, datetime

from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations.events import services as event_services
from tests.browser.helpers import log_in_as
from tests.browser.pages import PHONE, axe_violations_at_both_widths, new_sized_page


def test_team_pages_work_and_have_no_axe_violation(app_server, browser, contexts, staff_user):
    User.objects.create_user("ada", password="pw-ada-1", first_name="Ada")
    User.objects.create_user("cyd", password="pw-cyd-1", first_name="Cyd")
    checked: dict[str, list[str]] = {}

    root = new_sized_page(browser, PHONE, contexts)
    log_in_as(root, app_server, User.objects.get(username="staffer"))
    root.goto(f"{app_server}/teams/")
    checked["teams, empty"] = axe_violations_at_both_widths(root)
    root.get_by_label("Name").fill("Chemistry Society")
    root.get_by_label("Short id").fill("new")
    root.get_by_label("Team admins").fill("ada nobody")
    root.get_by_role("button", name="Create team").click()
    expect(root.locator(".field-error").first).to_be_visible()
    checked["teams, refused"] = axe_violations_at_both_widths(root)
    root.get_by_label("Short id").fill("chem")
    root.get_by_label("Team admins").fill("ada")
    root.get_by_role("button", name="Create team").click()
    expect(root.get_by_role("heading", name="Chemistry Society")).to_be_visible()
    event = event_services.event_create(title="Spectra night", starts_at=datetime(2030, 5, 1, 18, tzinfo=UTC),
                                        capacity=5, created_by="ada", team="chem")

    admin = new_sized_page(browser, PHONE, contexts)
    log_in_as(admin, app_server, User.objects.get(username="ada"))
    admin.goto(f"{app_server}/teams/")
    checked["teams, a team admin's"] = axe_violations_at_both_widths(admin)
    admin.get_by_role("link", name="Chemistry Society").click()
    admin.get_by_label("Username").fill("nobody")
    admin.get_by_role("button", name="Add member").click()
    expect(admin.locator(".field-error")).to_be_visible()
    checked["team, refused"] = axe_violations_at_both_widths(admin)
    admin.get_by_label("Username").fill("cyd")
    admin.get_by_label("Role", exact=True).select_option(label="Door volunteer")
    admin.get_by_role("button", name="Add member").click()
    expect(admin.locator(".messages")).to_contain_text("Added cyd as door volunteer")
    checked["team"] = axe_violations_at_both_widths(admin)

    admin.goto(f"{app_server}/events/{event.event_id}/")
    expect(admin.locator(".organizer")).to_have_text("Chemistry Society")
    checked["event, a team admin's"] = axe_violations_at_both_widths(admin)
    admin.locator("summary", has_text="More").click()  # the event's other actions fold into its menu
    admin.get_by_role("link", name="Door volunteers").click()
    checked["door volunteers"] = axe_violations_at_both_widths(admin)
    admin.get_by_label("Cyd").check()
    admin.get_by_role("button", name="Save").click()
    expect(admin.locator(".messages")).to_contain_text("Saved who works the door")

    volunteer = new_sized_page(browser, PHONE, contexts)
    log_in_as(volunteer, app_server, User.objects.get(username="cyd"))
    volunteer.goto(f"{app_server}/events/{event.event_id}/")
    checked["event, a door volunteer's"] = axe_violations_at_both_widths(volunteer)
    expect(volunteer.get_by_role("link", name="Edit event")).to_have_count(0)
    volunteer.get_by_role("link", name="Door page").click()
    expect(volunteer).to_have_url(f"{app_server}/events/{event.event_id}/door/")

    failures = {name: found for name, found in checked.items() if found}
    assert failures == {}, "\n".join(f"{name}: {found}" for name, found in failures.items())
