"""The Register button in Chromium: a key per tap, one retry with the same key, no-JS fallback (DynamoDB Local)."""

import re

import pytest
from django.contrib.auth.models import User

from registrations import selectors
from tems.identity import user_key
from tests.browser.helpers import signed_in
from tests.helpers import assert_invariants_clean
from tests.registrations.helpers import make_event

pytestmark = pytest.mark.browser

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@pytest.fixture
def tapper(transactional_db, live_server):
    return User.objects.create_user("tapper", "tapper@uni.test", "pw-tapper-1")


def open_event_page(browser, live_server, tapper, event, *, javascript=True):
    context = signed_in(browser.new_context(java_script_enabled=javascript), live_server.url, tapper)
    page = context.new_page()
    page.goto(f"{live_server.url}/events/{event.event_id}/")
    return page


def register_requests(page):
    sent = []
    page.on("request", lambda request: sent.append(request) if request.method == "POST" else None)
    return sent


def test_a_tap_sends_a_key_made_at_that_moment(ddb, browser, live_server, tapper):
    event = make_event(capacity=5, title="Quiz night")
    page = open_event_page(browser, live_server, tapper, event)
    rendered = page.locator("form.register-form input[name=idempotency_key]").input_value()
    sent = register_requests(page)
    page.get_by_role("button", name="Register").click()
    page.get_by_text("You have a seat.").wait_for()
    key = sent[0].headers["idempotency-key"]
    assert UUID4.match(key) and key != rendered
    assert page.locator("#registration-panel img.qr-code").count() == 1
    # The QR code is an image drawn by its own GET (issue 13): it loads, under the page's CSP and session.
    page.wait_for_function("() => { const img = document.querySelector('#registration-panel img.qr-code');"
                           " return img !== null && img.complete && img.naturalWidth > 0; }")
    assert "1 / 5 seats taken" in page.locator("#seats").inner_text()
    tapper = user_key(User.objects.get(username="tapper"))
    assert selectors.claim_get(event_id=event.event_id, user_id=tapper).status == "confirmed"


def test_a_network_error_is_retried_once_with_the_same_key(ddb, browser, live_server, tapper):
    event = make_event(capacity=5)
    page = open_event_page(browser, live_server, tapper, event)
    keys = []

    def flaky_network(route):
        keys.append(route.request.headers["idempotency-key"])
        if len(keys) == 1:
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/register/", flaky_network)
    page.get_by_role("button", name="Register").click()
    page.get_by_text("You have a seat.").wait_for()
    assert len(keys) == 2 and keys[0] == keys[1]
    assert len(selectors.registration_list(user_id=user_key(User.objects.get(username="tapper")))) == 1
    assert_invariants_clean()


def test_the_button_is_disabled_in_flight(ddb, browser, live_server, tapper):
    # hx-disabled-elt does it; switching it off is the lab's business (tests/browser/test_lab.py, the toggle).
    record_state = """() => {
        window.__disabledAtSend = [];
        document.addEventListener("htmx:beforeSend", (e) => {
            window.__disabledAtSend.push(e.detail.elt.querySelector("button").disabled);
        });
    }"""
    page = open_event_page(browser, live_server, tapper, make_event(capacity=5))
    page.evaluate(record_state)
    page.get_by_role("button", name="Register").click()
    page.get_by_text("You have a seat.").wait_for()
    assert page.evaluate("window.__disabledAtSend") == [True]


def test_key_fallback_without_random_uuid(ddb, browser, live_server, tapper):
    page = open_event_page(browser, live_server, tapper, make_event())
    keys = page.evaluate("""() => {
        Object.defineProperty(window.crypto, "randomUUID", {value: undefined});  // as on a plain-http origin
        return [window.temsUuid4(), window.temsUuid4()];
    }""")
    assert all(UUID4.match(key) for key in keys) and keys[0] != keys[1]


def test_without_javascript_the_form_posts_the_server_rendered_key(ddb, browser, live_server, tapper):
    event = make_event(capacity=5)
    page = open_event_page(browser, live_server, tapper, event, javascript=False)
    rendered = page.locator("form.register-form input[name=idempotency_key]").input_value()
    sent = register_requests(page)
    page.get_by_role("button", name="Register").click()
    page.get_by_text("You are registered for").wait_for()
    assert f"idempotency_key={rendered}" in sent[0].post_data
    assert page.locator("#registration-panel img.qr-code").count() == 1
