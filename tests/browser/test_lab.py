"""The lab in Chromium: real double clicks register once, a replay shows the same QR code, races are shown."""

import re

import pytest
from playwright.sync_api import expect

from registrations.models import Event, Registration
from tests.browser.helpers import log_in


@pytest.fixture
def demo_mode(settings):
    settings.TEMS_DEMO = True


def event_registrations(event_id: str) -> list:
    return list(Registration.query(Event.pk_for(event_id), Registration.sk.startswith(Registration.SK_PREFIX),
                                   consistent_read=True))


def tryit_event_id(page) -> str:
    url = page.locator("#tryit-panel").get_attribute("data-register-url")
    return re.search(r"/events/([^/]+)/register/", url).group(1)


def test_double_click_without_protection_sends_two_requests_and_registers_once(app_server, new_page, student,
                                                                             demo_mode):
    page = new_page()
    log_in(page, app_server, "student1", "pw-student-1")
    page.goto(f"{app_server}/lab/")
    page.get_by_label("Disable the button while a request is in flight").uncheck()
    posts = []
    page.on("response",
            lambda r: posts.append(r.status) if r.request.method == "POST" and "/register/" in r.url else None)
    page.locator("#tryit-panel form.register-form button[type=submit]").dblclick()
    # A locator, not wait_for_function: the page's CSP forbids the eval Playwright's string predicates need.
    expect(page.locator("#lab-request-log li")).to_have_count(2)
    assert posts == [200, 200]  # both taps really reached the server
    expect(page.locator("#tryit-panel")).to_contain_text("You have a seat.")
    expect(page.locator("#tryit-panel .registration-card")).to_have_count(1)
    assert len(event_registrations(tryit_event_id(page))) == 1


def test_burst_of_five_taps_registers_once(app_server, new_page, student, demo_mode):
    page = new_page()
    log_in(page, app_server, "student1", "pw-student-1")
    page.goto(f"{app_server}/lab/")
    page.get_by_role("button", name="Tap 5 times in 50 ms").click()
    expect(page.locator("#lab-request-log li")).to_have_count(5)
    keys = page.locator("#lab-request-log li code").all_inner_texts()
    assert len(set(keys)) == 5  # five taps, five keys
    expect(page.locator("#tryit-panel")).to_contain_text("You have a seat.")
    assert len(event_registrations(tryit_event_id(page))) == 1


def test_a_replayed_request_shows_the_same_qr_code(app_server, new_page, student, demo_mode):
    page = new_page()
    log_in(page, app_server, "student1", "pw-student-1")
    page.goto(f"{app_server}/lab/")
    first = {}
    replayed = []

    def lose_the_first_answer(route):
        if not first:
            # The server registers the student, then the answer is lost on the way back: the page must retry.
            response = route.fetch()
            first["html"] = response.text()
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/register/", lose_the_first_answer)
    page.on("response",
            lambda r: replayed.append(r.headers.get("idempotent-replayed")) if "/register/" in r.url else None)
    page.locator("#tryit-panel form.register-form button[type=submit]").click()
    expect(page.locator("#tryit-panel")).to_contain_text("You have a seat.")
    assert replayed == ["true"]
    shown_qr = page.locator("#tryit-panel .qr svg").evaluate("svg => svg.outerHTML")
    first_qr = re.search(r"<svg.*?</svg>", first["html"], re.S).group(0)
    assert _normalise(shown_qr) == _normalise(first_qr) != []
    assert len(event_registrations(tryit_event_id(page))) == 1


def _normalise(svg: str) -> list[str]:
    # The browser re-serialises the SVG (<path/> becomes <path></path>); the drawn modules are what must match.
    return re.findall(r'\sd="([^"]+)"', svg)


def test_lab_page_shows_naive_duplicates_and_production_exactly_one(app_server, new_page, staff_user):
    page = new_page()
    log_in(page, app_server, "staffer", "pw-staff-1")
    page.goto(f"{app_server}/lab/")
    race = page.locator("#registration-race")
    race.get_by_label("Technique", exact=True).select_option("naive")
    race.get_by_role("button", name="Fire").click()
    expect(page.locator("#registration-race .verdict")).to_contain_text("duplicates")
    records = int(re.search(r"(\d+) registrations for one student",
                            page.locator("#registration-race .verdict").inner_text()).group(1))
    assert records > 1
    page.locator("#registration-race").get_by_label("Technique", exact=True).select_option("production")
    page.locator("#registration-race").get_by_role("button", name="Fire").click()
    expect(page.locator("#registration-race .verdict")).to_contain_text("exactly 1 registration")
    expect(page.locator("#registration-race svg.chart rect")).to_have_count(2)
