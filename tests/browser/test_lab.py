"""The lab in Chromium: real double clicks register once, a replay shows the same QR code, races are shown."""

import re

import pytest
from playwright.sync_api import expect

from registrations import selectors
from tests.browser.helpers import log_in_as
from tests.browser.pages import PHONE, resized


@pytest.fixture
def demo_mode(settings):
    settings.TEMS_DEMO = True


def event_registrations(event_id: str) -> list:
    return list(selectors.event_registrations(event_id=event_id))


def tryit_event_id(page) -> str:
    url = page.locator("#tryit-panel").get_attribute("data-register-url")
    return re.search(r"/events/([^/]+)/register/", url).group(1)


def open_lab(page, app_server, user) -> None:
    log_in_as(page, app_server, user)
    page.goto(f"{app_server}/lab/")


def start_over(page) -> None:
    """A new scratch event in place of the old: the try-it section is replaced, its request log empty."""
    page.get_by_role("button", name="Start over with a new event").click()
    expect(page.locator("#lab-request-log li")).to_have_count(0)


# Each flow below starts again with "Start over" where a check needs a scratch event nobody is registered for:
# the section it replaces is all a check reads, and a new page would only cost a load.

def test_a_tap_with_protection_on_is_logged_counted_on_its_line_and_a_replay_shows_the_same_qr_code(
        app_server, new_page, student, demo_mode):
    page = new_page()
    open_lab(page, app_server, student)
    expect(page.get_by_label("Disable the button while a request is in flight")).to_be_checked()
    page.locator("#tryit-panel form.register-form button[type=submit]").click()
    expect(page.locator("#tryit-panel")).to_contain_text("You have a seat.")
    log = page.locator("#lab-request-log li")
    expect(log).to_have_count(1)
    expect(log.first).to_contain_text("Tap 1, key")
    expect(log.first).to_contain_text("200")
    expect(page.locator("#seats")).to_contain_text("1 / 20 seats taken")
    seats = page.locator("#seats").bounding_box()
    assert abs(seats["y"] - page.locator("#tryit-panel code").first.bounding_box()["y"]) < 8

    start_over(page)
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
    # The QR code is an image of the registration's own URL, drawn on read: the replay shows the first answer's
    # image.
    shown_qr = page.locator("#tryit-panel img.qr-code").get_attribute("src")
    first_qr = re.search(r'<img class="qr-code" src="([^"]+)"', first["html"]).group(1)
    assert shown_qr == first_qr and shown_qr.endswith("/qr.svg")
    assert len(event_registrations(tryit_event_id(page))) == 1


def test_a_burst_of_five_taps_registers_once_and_tap_numbers_start_again_after_start_over(app_server, new_page,
                                                                                         student, demo_mode):
    page = new_page()
    open_lab(page, app_server, student)
    page.get_by_role("button", name="Tap 5 times in 50 ms").click()
    expect(page.locator("#lab-request-log li.log-ok")).to_have_count(5)
    keys = page.locator("#lab-request-log li code").all_inner_texts()
    assert len(set(keys)) == 5  # five taps, five keys
    expect(page.locator("#tryit-panel")).to_contain_text("You have a seat.")
    assert len(event_registrations(tryit_event_id(page))) == 1

    start_over(page)
    page.get_by_role("button", name="Tap 5 times in 50 ms").click()
    expect(page.locator("#lab-request-log li.log-ok")).to_have_count(5)
    assert [line.split(",")[0] for line in page.locator("#lab-request-log li").all_inner_texts()] == [
        "Tap 1", "Tap 2", "Tap 3", "Tap 4", "Tap 5"]


def test_double_clicks_without_protection_register_once_and_are_numbered_as_made(app_server, new_page, student,
                                                                                 demo_mode):
    """A double click with protection off sends two taps and registers once; after "Start over" protection is
    still off, and taps are numbered in the order they were made, not answered."""
    page = new_page()
    open_lab(page, app_server, student)
    toggle = page.get_by_label("Disable the button while a request is in flight")
    toggle.uncheck()
    posts = []
    page.on("response",
            lambda r: posts.append(r.status) if r.request.method == "POST" and "/register/" in r.url else None)
    page.locator("#tryit-panel form.register-form button[type=submit]").dblclick()
    # A locator, not wait_for_function: the page's CSP forbids the eval Playwright's string predicates need.
    # A line appears when a tap is sent and turns log-ok when its answer is in.
    expect(page.locator("#lab-request-log li.log-ok")).to_have_count(2)
    assert posts == [200, 200]  # both taps really reached the server
    expect(page.locator("#tryit-panel")).to_contain_text("You have a seat.")
    expect(page.locator("#tryit-panel .registration-card")).to_have_count(1)
    assert len(event_registrations(tryit_event_id(page))) == 1

    start_over(page)  # the section is replaced, the toggle with it
    expect(page.locator("#tryit-panel form.register-form")).to_have_attribute("data-disable-while-in-flight", "false")
    expect(toggle).not_to_be_checked()
    posts.clear()
    sent, held = [], []

    def hold_the_first_tap(route):
        sent.append(route.request.headers["idempotency-key"])
        if len(sent) == 1:
            held.append(route)  # sent on only once the second tap has its answer, so the first answer comes last
        else:
            route.continue_()

    page.route("**/register/", hold_the_first_tap)
    page.locator("#tryit-panel form.register-form button[type=submit]").dblclick()
    expect(page.locator("#lab-request-log li.log-ok")).to_have_count(1)
    held.pop().continue_()
    expect(page.locator("#lab-request-log li.log-ok")).to_have_count(2)
    assert posts == [200, 200]  # protection really is still off: the second tap went while the first was out
    lines = page.locator("#lab-request-log li").all_inner_texts()
    assert [line.split(",")[0] for line in lines] == ["Tap 1", "Tap 2"]
    assert [line.split("key ")[1][:8] for line in lines] == [key[:8] for key in sent]


def fire(page, section: str, technique: str, taps: str | None = None) -> None:
    form = page.locator(section)
    form.get_by_label("Technique", exact=True).select_option(technique)
    if taps is not None:
        form.get_by_label("Taps", exact=True).fill(taps)
    form.get_by_role("button", name="Fire").click()


def test_the_registration_race_shows_naive_duplicates_and_production_exactly_one(app_server, new_page, staff_user):
    """The race's verdicts, its chart comparing only runs with the same settings, readable on a phone, and its
    conflicts, retries and write units explained."""
    page = new_page()
    open_lab(page, app_server, staff_user)
    verdict = page.locator("#registration-race .verdict")
    fire(page, "#registration-race", "naive")
    expect(verdict).to_contain_text("duplicates")
    records = int(re.search(r"(\d+) registrations for one student", verdict.inner_text()).group(1))
    assert records > 1
    with resized(page, PHONE):
        label = page.locator("#registration-race svg.chart .chart-label").first
        expect(label).to_be_visible()
        chart = page.locator("#registration-race svg.chart").bounding_box()
        assert chart["x"] >= 0 and chart["x"] + chart["width"] <= PHONE["width"]
        # 13 px text drawn at phone scale: a label column beside the bars shrank it to about 6 px.
        assert label.bounding_box()["height"] >= 11
        title = page.locator("#registration-race svg.chart .chart-title").bounding_box()
        assert title["x"] + title["width"] <= chart["x"] + chart["width"] + 1
    fire(page, "#registration-race", "production")
    expect(verdict).to_contain_text("exactly 1 registration")
    expect(page.locator("#registration-race svg.chart rect")).to_have_count(2)

    fire(page, "#registration-race", "naive", taps="6")
    expect(verdict).to_contain_text("6 taps")
    fire(page, "#registration-race", "production", taps="3")
    expect(verdict).to_contain_text("3 taps")
    chart = page.locator("#registration-race svg.chart")
    expect(chart.locator("rect")).to_have_count(1)  # no earlier run had these settings: none set beside this one
    expect(chart).to_contain_text("All with 3 taps, one key per tap, 20 ms delay")

    page.locator("#registration-race .lab-notes summary").click()
    wcu = page.locator("#registration-race .lab-notes dt", has_text="WCU")
    expect(wcu).to_be_visible()
    expect(page.locator("#registration-race .lab-notes dd").nth(2)).to_contain_text("2 per item inside a transaction")


def test_the_lost_update_result_says_what_was_lost_and_its_notes_explain_conflicts_and_retries(app_server, new_page,
                                                                                            staff_user):
    page = new_page()
    open_lab(page, app_server, staff_user)
    verdict = page.locator("#lost-update .verdict")
    fire(page, "#lost-update", "naive")
    expect(verdict).to_contain_text("started with 30; 10 writers sold 2 each, so 10 should be left.")
    expect(verdict).to_contain_text("of sales lost")
    expect(verdict).to_contain_text("the stock is overstated by")
    expect(verdict).to_contain_text("No conflicts: the naive write checks nothing")
    fire(page, "#lost-update", "versioned")
    expect(verdict).to_contain_text("Nothing lost: every sale is in the stock.")
    expect(page.locator("#lost-update tbody tr").first.locator("td").nth(1)).to_have_text("30")  # the start
    fire(page, "#lost-update", "atomic")
    expect(page.locator("#lost-update tbody tr")).to_have_count(3)

    page.locator("#lost-update .lab-notes summary").click()
    expect(page.locator("#lost-update .lab-notes dt", has_text="Conflicts")).to_be_visible()
    expect(page.locator("#lost-update .lab-notes dd").nth(1)).to_contain_text("another writer changed the item")
    expect(page.locator("#lost-update .lab-notes dt", has_text="Retries")).to_be_visible()
