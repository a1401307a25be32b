"""Shared helpers of the browser tests."""

from playwright.sync_api import Page


def log_in(page: Page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}/events/")
