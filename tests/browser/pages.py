"""Helpers for the browser tests of what a person sees: a phone-sized page, and the axe-core scan."""

import functools
from pathlib import Path

from playwright.sync_api import Browser, Page

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1200, "height": 900}
# Vendored from npm (package.json devDependencies) and injected by the tests only; no page of TEMS loads it.
AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"


def new_sized_page(browser: Browser, viewport: dict, contexts: list, **options) -> Page:
    context = browser.new_context(viewport=viewport, **options)
    contexts.append(context)
    return context.new_page()


def serious_axe_violations(page: Page) -> list[str]:
    """axe-core's WCAG 2.2 A/AA rules on the page as it is now; only serious and critical violations."""
    return axe_violations(page, impacts=("serious", "critical"))


def serious_axe_violations_at_both_widths(page: Page) -> list[str]:
    """``serious_axe_violations`` on a phone, then on a desktop, of the page loaded once: a resize lays the page
    out again as a load at that width would (its CSS decides the layout; no script reads the width)."""
    found = []
    for name, viewport in (("phone", PHONE), ("desktop", DESKTOP)):
        page.set_viewport_size(viewport)
        found += [f"{name}: {violation}" for violation in serious_axe_violations(page)]
    return found


@functools.cache
def _axe_source() -> str:
    return AXE.read_text()


def axe_violations(page: Page, *, impacts: tuple[str, ...] | None = None) -> list[str]:
    """axe-core's WCAG 2.2 A/AA rules on the page as it is now: every violation, or those of ``impacts``."""
    # evaluate() runs through the DevTools protocol, so the page's strict CSP (script-src 'self') allows it.
    page.evaluate(_axe_source())
    # resultTypes: only violations are collected node by node; passes and the rest stop at their first node,
    # which is most of a run's time on a long page and nothing this check reads.
    return page.evaluate(
        """(impacts) => axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a",
                                                                           "wcag21aa", "wcag22aa"]},
                                           resultTypes: ["violations"]})
                  .then(r => r.violations.filter(v => impacts === null || impacts.includes(v.impact))
                  .map(v => v.id + ": " + v.help + " @ "
                            + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", ")))""",
        None if impacts is None else list(impacts),
    )


def fits_the_width(page: Page) -> bool:
    """True if nothing on the page is wider than the viewport (no sideways scrolling on a phone)."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
