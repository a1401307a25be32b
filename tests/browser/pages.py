"""Helpers for the browser tests of what a person sees: a phone-sized page, and the axe-core scan."""

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
    # evaluate() runs through the DevTools protocol, so the page's strict CSP (script-src 'self') allows it.
    page.evaluate(AXE.read_text())
    violations = page.evaluate(
        """() => axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa",
                                                                   "wcag22aa"]}})
                  .then(r => r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
                  .map(v => v.id + ": " + v.help + " @ "
                            + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", ")))"""
    )
    return violations
