"""Screenshots of the main pages, desktop and a 390x844 phone, into docs/screenshots/ (not a test).

Run against the demo (`make run` in another terminal, or any TEMS with the demo data seeded):

    make screenshots                      # or: .venv/bin/python tests/browser/screenshots.py --base-url URL
"""

import argparse
import re
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
VIEWPORTS = {"desktop": {"width": 1200, "height": 900}, "phone": {"width": 390, "height": 844}}
PASSWORD = "tems-demo-pass"  # the published demo password (tems/demo.py); demo mode only


def log_in(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}/events/")


def shoot(page: Page, name: str, size: str) -> None:
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(OUT / f"{name}-{size}.png"), full_page=size == "desktop")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    base = args.base_url.rstrip("/")
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        for size, viewport in VIEWPORTS.items():
            context = browser.new_context(viewport=viewport)
            page = context.new_page()
            page.goto(f"{base}/accounts/login/")
            shoot(page, "login", size)
            log_in(page, base, "dara")
            shoot(page, "events", size)
            page.goto(f"{base}/events/calendar/")
            shoot(page, "calendar", size)
            page.goto(f"{base}/events/?q=workshop&free=on")
            shoot(page, "search", size)
            page.goto(f"{base}/events/")
            page.locator(".event-card a").first.click()
            page.wait_for_url(re.compile(r".*/events/[^/]+/$"))
            register = page.locator(".register-form button[type=submit]")
            if register.count():
                register.click()
                page.locator(".panel-notice").wait_for()
            shoot(page, "event-registered", size)
            cancel = page.locator(".cancel-step a.button")
            if cancel.count():
                cancel.click()
                page.locator(".cancel-question").wait_for()
                shoot(page, "cancel-confirm", size)
            page.goto(f"{base}/me/registrations/")
            shoot(page, "my-registrations", size)
            page.goto(f"{base}/no/such/page/")
            shoot(page, "not-found", size)
            context.close()

            context = browser.new_context(viewport=viewport)
            page = context.new_page()
            log_in(page, base, "staff")
            for name, path in (("staff-new-event", "/events/new/"), ("inventory", "/inventory/"), ("lab", "/lab/")):
                page.goto(f"{base}{path}")
                shoot(page, name, size)
            context.close()
        browser.close()
    print(f"screenshots written to {OUT}")


if __name__ == "__main__":
    main()
