"""A student logs in with the university's account in Chromium: through the real test provider's log-in form and
back, and out of TEMS and the provider both. The flow runs on a phone; the SSO log-in and sign-up pages are checked
axe-clean at both widths, and the signed-in header at a desktop's width too."""

import pytest
from playwright.sync_api import expect

from tests.browser.pages import DESKTOP, PHONE, new_sized_page, resized, serious_axe_violations_at_both_widths
from tests.oidc.provider import LocalIdP

pytestmark = pytest.mark.browser


@pytest.fixture
def university(app_server, settings):
    with LocalIdP(redirect_uris=[f"{app_server}/accounts/sso/callback/"],
                  post_logout_redirect_uris=[f"{app_server}/accounts/login/"],
                  accounts={"u-42": {"email": "grace@uni.test", "email_verified": True,
                                     "preferred_username": "grace"}}) as idp:
        settings.TEMS_OIDC_ISSUER = idp.issuer
        settings.TEMS_OIDC_CLIENT_ID = idp.client_id
        settings.TEMS_OIDC_CLIENT_SECRET = idp.client_secret
        settings.TEMS_OIDC_NAME = "Test University"
        yield idp


def test_a_student_logs_in_with_the_university_and_out_again(app_server, university, browser, contexts):
    page = new_sized_page(browser, PHONE, contexts)
    page.goto(f"{app_server}/accounts/signup/")
    assert serious_axe_violations_at_both_widths(page) == []
    page.goto(f"{app_server}/accounts/login/")
    assert serious_axe_violations_at_both_widths(page) == []

    page.get_by_role("link", name="Log in with Test University").click()
    page.wait_for_url(f"{university.issuer}/**")
    page.get_by_placeholder("Enter any login").fill("u-42")
    page.get_by_placeholder("and password").fill("anything")
    page.get_by_role("button", name="Sign-in").click()

    page.wait_for_url(f"{app_server}/events/")
    with resized(page, DESKTOP):  # a desktop shows who is signed in, and Log out, in the header without a menu
        expect(page.locator(".who")).to_be_visible()
        expect(page.locator(".who")).to_contain_text("Signed in as grace")
        expect(page.get_by_role("button", name="Log out")).to_be_visible()
    page.get_by_text("Menu", exact=True).click()  # on a phone the links are folded under the menu button
    expect(page.locator(".who")).to_contain_text("Signed in as grace")
    page.get_by_role("button", name="Log out").click()
    # On through the provider's log-out, which asks, and back to TEMS's log-in page, logged out of both.
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(f"{app_server}/accounts/login/")
    log_in_link = page.get_by_role("navigation", name="Main").get_by_role("link", name="Log in")
    expect(log_in_link).to_be_visible()
    with resized(page, DESKTOP):
        expect(log_in_link).to_be_visible()
    page.goto(f"{app_server}/me/registrations/")
    page.wait_for_url(f"{app_server}/accounts/login/?next=/me/registrations/")
    page.get_by_role("link", name="Log in with Test University").click()
    expect(page.get_by_placeholder("Enter any login")).to_be_visible()  # the provider asks again
