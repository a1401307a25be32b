"""Browser tests: Playwright drives Debian's Chromium against a live Django server on DynamoDB Local."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("TEMS_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# Playwright's sync API keeps an event loop on the test thread; the ORM calls our fixtures make are still
# synchronous and safe, so Django's async guard is lifted for these tests only.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(items):
    for item in items:
        if "browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: `make test` installs it (apt-get install chromium).")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"],
        )
        yield browser
        browser.close()


@pytest.fixture
def app_server(ddb, live_server, transactional_db):
    """The real app on a live server, its models pointed at this test's DynamoDB Local table."""
    return live_server.url


@pytest.fixture
def new_page(browser, request):
    """Make pages in fresh browser contexts; each is screenshotted into test-artifacts/ if the test fails."""
    contexts = []

    def make():
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        contexts.append(context)
        return context.new_page()

    yield make
    failed = getattr(request.node, "report_call", None) is not None and request.node.report_call.failed
    for n, context in enumerate(contexts):
        if failed:
            ARTIFACTS.mkdir(exist_ok=True)
            for m, page in enumerate(context.pages):
                page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-{n}-{m}.png"), full_page=True)
        context.close()


def log_in(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}/events/")
