"""Helpers for the browser tests of what a person sees: a phone-sized page, checks of the page as loaded at a
phone's width and a desktop's, and the axe-core scan."""

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path

from playwright.sync_api import Browser, Locator, Page

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


@contextlib.contextmanager
def resized(page: Page, viewport: dict) -> Iterator[Page]:
    """The page at ``viewport``'s size inside the block and at the size it had after it: a check of one width's
    layout in the middle of a flow that goes on at its own width."""
    size = page.viewport_size
    page.set_viewport_size(viewport)
    try:
        yield page
    finally:
        page.set_viewport_size(size)


def at_both_widths(page: Page, look: Callable[[Page], list[str]]) -> list[str]:
    """What ``look`` finds on a phone, then on a desktop, of the page loaded once, each prefixed with the width; the
    page is left at the size it had, so a flow goes on where it was. A resize lays the page out again as a load at
    that width would (the pages' CSS decides the layout; no script reads the width), so one flow on a phone checks
    both layouts without being run twice."""
    found = []
    for name, viewport in (("phone", PHONE), ("desktop", DESKTOP)):
        with resized(page, viewport):
            found += [f"{name}: {problem}" for problem in look(page)]
    return found


def axe_violations_at_both_widths(page: Page, *, impacts: tuple[str, ...] | None = None) -> list[str]:
    """``axe_violations`` of the page as it is now, on a phone and on a desktop (see ``at_both_widths``)."""
    return at_both_widths(page, functools.partial(axe_violations, impacts=impacts))


def serious_axe_violations_at_both_widths(page: Page) -> list[str]:
    """``serious_axe_violations`` of the page as it is now, on a phone and on a desktop (see ``at_both_widths``)."""
    return axe_violations_at_both_widths(page, impacts=("serious", "critical"))


@functools.cache
def _axe_source() -> str:
    return AXE.read_text()


def axe_violations(page: Page, *, impacts: tuple[str, ...] | None = None) -> list[str]:
    """axe-core's WCAG 2.2 A/AA rules on the page as it is now: every violation, or those of ``impacts``."""
    # evaluate() runs through the DevTools protocol, so the page's strict CSP (script-src 'self') allows it. Once per
    # document: a check at both widths, or after an htmx swap, finds it there already.
    if not page.evaluate("typeof window.axe === 'object'"):
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


def sideways_scroll(page: Page) -> list[str]:
    """The page's sideways scroll at its present width, if it has one: a ``look`` for ``at_both_widths``."""
    scroll, width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return [] if scroll <= width else [f"scrolls sideways: {scroll} px on {width} px"]


def outside_the_screen(page: Page, boxes: Locator) -> list[str]:
    """Each of ``boxes`` that reaches past the viewport's left or right edge (cut off, or only seen by scrolling
    sideways), by its text, and the page's sideways scroll if it has one."""
    width = page.viewport_size["width"]
    found = []
    for box in boxes.all():
        edges = box.bounding_box()
        if edges["x"] < 0 or edges["x"] + edges["width"] > width + 0.5:
            found.append(f"{box.inner_text()!r} at {edges['x']:.0f}..{edges['x'] + edges['width']:.0f} px")
    return found + sideways_scroll(page)
