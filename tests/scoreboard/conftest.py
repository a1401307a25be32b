"""The scoreboard's scenarios: each test carries the report it replays, and a run with ``TEMS_SCOREBOARD`` set
(``make scoreboard``) writes the page from what the run saw, TEMS's results and the broken variants' alike
(``TEMS_SCOREBOARD_LAB``: the same rows as JSON, for the lab's page)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from registrations.seating.hints import hints
from tests.scoreboard import page

PROPERTY = "scoreboard"
# The results of this run, by test id; on the process that writes the page (under xdist, the controller,
# which receives every worker's reports with their properties).
RESULTS: dict[str, dict] = {}


def pytest_collection_modifyitems(items):
    for item in items:
        module = getattr(item, "module", None)
        report = getattr(module, "REPORT", None)
        if report is None or not module.__name__.startswith("tests.scoreboard."):
            continue
        params = getattr(item, "callspec", None)
        variant = params.params.get("variant", "tems") if params else "tems"
        item.user_properties.append((PROPERTY, json.dumps({
            "module": module.__name__.rpartition(".")[2], "variant": variant, "report": dataclasses.asdict(report)})))


def pytest_runtest_logreport(report):
    carried = dict(report.user_properties).get(PROPERTY)
    if carried is None:
        return
    # The call's outcome; a setup that did not pass (an error, a skip before the call) is the outcome too.
    if report.when == "call" or (report.when == "setup" and not report.passed) or (
            report.when == "teardown" and report.failed):
        RESULTS[report.nodeid] = {**json.loads(carried), **page.outcome_of(report)}


def pytest_sessionfinish(session):
    target = os.environ.get("TEMS_SCOREBOARD")
    if not target or hasattr(session.config, "workerinput") or not RESULTS:
        return
    lab_copy = os.environ.get("TEMS_SCOREBOARD_LAB")
    page.write(Path(target), list(RESULTS.values()), lab_copy=Path(lab_copy) if lab_copy else None)


@pytest.fixture(autouse=True)
def cold_process(settings):
    """Every scenario starts as a fresh server process (no routing hint from another test) whose students may
    each receive as many mails as a scenario sends."""
    settings.TEMS_NOTIFICATION_MAILS_PER_HOUR = 1000
    hints.reset()
    yield
    hints.reset()
