"""Shared helpers of the browser tests."""

from django.conf import settings
from django.test import Client
from playwright.sync_api import BrowserContext, Page


def log_in(page: Page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}/events/")


def signed_in(context: BrowserContext, base_url: str, user) -> BrowserContext:
    """The browser context logged in as ``user`` without the log-in form: a session made by Django's test client,
    its cookie handed to the context, for a test about what a logged-in person sees rather than about logging in
    (``log_in`` goes through the form: three page loads). The session names the backend a form log-in names, so
    every request reads the user as after one."""
    client = Client()
    client.force_login(user, backend="tems.identity.IdentityModelBackend")
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME,
                          "value": client.cookies[settings.SESSION_COOKIE_NAME].value, "url": base_url}])
    return context


def log_in_as(page: Page, base_url: str, user) -> None:
    """The page's browser context logged in as ``user`` (see ``signed_in``)."""
    signed_in(page.context, base_url, user)
