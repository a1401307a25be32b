"""Approval in Chromium, run on a phone: a platform admin makes a society need the union's approval, the
society's draft says "Waiting for approval" to its manager and is no student's to see, and the union's approver
sends it back with a note, then publishes it from the approvals page; a second tap on a stale page reads who
published. Every page on the way has no axe-core violation at all (WCAG 2.2 A/AA, every impact) at a phone's width
and a desktop's, error states included."""

from datetime import UTC, datetime

from django.contrib.auth.models import User
from playwright.sync_api import expect

from registrations.events import services as event_services
from tems.models import Membership, Team
from tems.permissions import EVENT_MANAGER
from tests.browser.helpers import log_in_as
from tests.browser.pages import PHONE, axe_violations_at_both_widths, new_sized_page


def test_approval_pages_work_and_have_no_axe_violation(app_server, browser, contexts, staff_user):
    union = Team.objects.create(id="union", name="Students' Union")
    chess = Team.objects.create(id="chess", name="Chess Society")
    for username, team in (("soc", chess), ("ann", union), ("ben", union)):
        user = User.objects.create_user(username, password=f"pw-{username}-1", first_name=username.title())
        Membership.objects.create(user=user, team=team, role=EVENT_MANAGER)
    User.objects.create_user("stu", password="pw-stu-1")
    checked: dict[str, list[str]] = {}

    root = new_sized_page(browser, PHONE, contexts)
    log_in_as(root, app_server, User.objects.get(username="staffer"))
    root.goto(f"{app_server}/teams/chess/")
    root.get_by_label("Events need approval").check()
    root.get_by_role("button", name="Save approval setting").click()
    expect(root.locator(".field-error")).to_contain_text("Choose the team that approves")
    checked["team settings, refused"] = axe_violations_at_both_widths(root)
    root.get_by_label("Overseen by").select_option(label="Students' Union")
    root.get_by_role("button", name="Save approval setting").click()
    expect(root.locator(".messages")).to_contain_text("need approval by Students' Union")
    checked["team settings"] = axe_violations_at_both_widths(root)

    draft = event_services.event_create(title="Blitz night", starts_at=datetime(2030, 5, 1, 18, tzinfo=UTC),
                                        capacity=5, created_by="soc", team="chess", draft=True)
    manager = new_sized_page(browser, PHONE, contexts)
    log_in_as(manager, app_server, User.objects.get(username="soc"))
    manager.goto(f"{app_server}/events/{draft.event_id}/")
    expect(manager.locator(".event-draft")).to_contain_text("Waiting for approval")
    checked["draft, its manager's"] = axe_violations_at_both_widths(manager)

    student = new_sized_page(browser, PHONE, contexts)
    log_in_as(student, app_server, User.objects.get(username="stu"))
    assert student.goto(f"{app_server}/events/{draft.event_id}/").status == 404

    stale = new_sized_page(browser, PHONE, contexts)
    log_in_as(stale, app_server, User.objects.get(username="ben"))
    stale.goto(f"{app_server}/approvals/")
    approver = new_sized_page(browser, PHONE, contexts)
    log_in_as(approver, app_server, User.objects.get(username="ann"))
    approver.goto(f"{app_server}/approvals/")
    checked["approvals"] = axe_violations_at_both_widths(approver)
    approver.locator("summary", has_text="Send back").click()
    approver.get_by_label("What should the team change?").fill("Say which room, please.")
    approver.get_by_role("button", name="Send back", exact=True).click()
    expect(approver.locator(".sent-back")).to_contain_text("Say which room, please.")
    checked["approvals, sent back"] = axe_violations_at_both_widths(approver)
    approver.get_by_role("button", name="Publish “Blitz night”").click()
    expect(approver.locator(".messages")).to_contain_text("Published")
    expect(approver.locator(".empty")).to_contain_text("Nothing is waiting")
    checked["approvals, emptied"] = axe_violations_at_both_widths(approver)

    stale.get_by_role("button", name="Publish “Blitz night”").click()
    expect(stale.get_by_role("alert")).to_contain_text("Already published by Ann")
    checked["approvals, too late"] = axe_violations_at_both_widths(stale)

    student.goto(f"{app_server}/events/")
    expect(student.get_by_text("Blitz night")).to_be_visible()

    failures = {name: found for name, found in checked.items() if found}
    assert failures == {}, "\n".join(f"{name}: {found}" for name, found in failures.items())
