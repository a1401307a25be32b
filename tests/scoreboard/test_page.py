"""The scoreboard page: verdicts read from the run's outcomes, and the committed page in step with the scenarios.
(No ``REPORT`` here: these tests are not rows.)"""

from __future__ import annotations

import importlib
import json
import pkgutil
from datetime import UTC, datetime

from lab.scoreboard import scoreboard_last_run
from tests import scoreboard as scoreboard_package
from tests.scoreboard import page

SAMPLE = {"peer": "P", "issue": "#1", "url": "https://example.test/1", "wrong": "w", "scenario": "s",
          "broken": "b", "missing": ""}


def result(variant: str, outcome: str, message: str = "") -> dict:
    return {"module": "test_x", "variant": variant, "report": SAMPLE, "outcome": outcome, "seconds": 1.0,
            "message": message}


def board(*results: dict) -> dict:
    return page.scoreboard(list(results), run_at=datetime(2026, 12, 6, tzinfo=UTC), commit="abc")


def test_a_row_holds_only_when_tems_passes_and_the_broken_variant_fails():
    good = board(result("tems", "passed"), result("broken", "xfailed", "2 confirmed for 1 seat"))
    assert (good["hold"], good["caught"]) == (1, 1)
    assert "**fails, as it must**: 2 confirmed for 1 seat" in page.render(good)
    blind = board(result("tems", "passed"), result("broken", "xpassed"))
    assert blind["caught"] == 0 and "**PASSES**" in page.render(blind)
    failing = board(result("tems", "failed", "3 confirmed for 1 seat"), result("broken", "xfailed", "x"))
    assert failing["hold"] == 0 and "**FAILS**: 3 confirmed for 1 seat" in page.render(failing)


def test_the_committed_page_has_a_row_for_every_scenario_and_agrees_with_the_labs_copy():
    modules = set()
    for info in pkgutil.iter_modules(scoreboard_package.__path__):
        module = importlib.import_module(f"tests.scoreboard.{info.name}")
        if info.name.startswith("test_") and hasattr(module, "REPORT"):
            modules.add(f"tests/scoreboard/{info.name}.py")
    last_run = scoreboard_last_run()
    assert last_run is not None, "no scoreboard run recorded: make scoreboard"
    assert {row["module"] for row in last_run["rows"]} == modules, "the scoreboard is stale: make scoreboard"
    written = (page.REPOSITORY / "docs" / "SCOREBOARD.md").read_text(encoding="utf-8")
    assert written == page.render(last_run), json.dumps(last_run)[:200]
