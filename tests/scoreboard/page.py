"""docs/SCOREBOARD.md, written from a run's results (tests/scoreboard/conftest.py collects them): one row per
report, its result against TEMS and against the broken variant that reproduces the peer's bug."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[2]


def outcome_of(report) -> dict[str, Any]:
    """What a pytest report says, in the page's terms: passed, failed, xfailed (failed as a broken variant
    must), xpassed (a broken variant that passed: the scenario cannot tell), skipped; with the message seen."""
    if report.passed:
        return {"outcome": "passed", "seconds": round(report.duration, 1), "message": ""}
    if hasattr(report, "wasxfail"):
        kind = "xfailed" if report.skipped else "xpassed"
        return {"outcome": kind, "seconds": round(report.duration, 1), "message": _first_error_line(report)}
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        return {"outcome": "skipped", "seconds": 0.0, "message": reason.removeprefix("Skipped: ")}
    return {"outcome": "failed", "seconds": round(report.duration, 1), "message": _first_error_line(report)}


def _first_error_line(report) -> str:
    text = getattr(report, "longreprtext", "") or ""
    for line in text.splitlines():
        if line.startswith("E "):
            return line[1:].strip().removeprefix("AssertionError: ").removeprefix("Failed: ")
    return text.strip().splitlines()[-1] if text.strip() else ""


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPOSITORY, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""


def run_commit(page_path: Path) -> str:
    """The commit the run tested, marked when the checkout differed from it (the page itself aside)."""
    commit = _git("rev-parse", "--short=12", "HEAD").strip() or "unknown"
    try:
        own = str(page_path.resolve().relative_to(REPOSITORY))
    except ValueError:
        own = None  # a page written outside the checkout
    changed = [line for line in _git("status", "--porcelain", "--untracked-files=no").splitlines()
               if line[3:] != own]
    return f"{commit} + uncommitted changes" if changed else commit


def _tems_result(result: dict | None) -> str:
    if result is None:
        return "not run"
    return {
        "passed": f"**passes** ({result['seconds']} s)",
        "failed": f"**FAILS**: {result['message']}",
        "skipped": f"not replayed: {result['message']}",
    }.get(result["outcome"], f"{result['outcome']}: {result['message']}")


def _broken_result(result: dict | None) -> str:
    if result is None:
        return "none (no feature to break)"
    return {
        "xfailed": f"**fails**, as it must: {result['message']}",
        "xpassed": "**PASSES**: the scenario cannot tell the broken variant from TEMS",
        "failed": f"**ERROR**: {result['message']}",
        "skipped": f"not run: {result['message']}",
    }.get(result["outcome"], f"{result['outcome']}: {result['message']}")


def render(results: list[dict], *, run_at: datetime, commit: str) -> str:
    rows: dict[str, dict] = {}
    for result in results:
        row = rows.setdefault(result["module"], {"report": result["report"]})
        row[result["variant"]] = result
    run = f"{run_at:%Y-%m-%d %H:%M} UTC, {commit}"
    replayed = [row for row in rows.values() if not row["report"]["missing"]]
    holds = sum(1 for row in replayed if row.get("tems", {}).get("outcome") == "passed")
    caught = sum(1 for row in replayed if row.get("broken", {}).get("outcome") == "xfailed")
    lines = [
        "# Correctness scoreboard: other event systems' bugs, replayed against TEMS",
        "",
        "Each row is a failure that real users reported against an event or ticketing system a university might "
        "choose instead of TEMS. The same situation is built on TEMS through its own entry points, at the "
        "concurrency or fault that caused it (simultaneous taps, a relay killed mid-batch, a lost answer, two "
        "doors at once), and what the reporter expected is asserted exactly. Each scenario also runs against a "
        "broken variant of TEMS that brings the peer's bug back (a read-then-write, a mail sent outside the "
        "transaction, a count kept beside the data): it must fail there, or the scenario could not tell the "
        "difference.",
        "",
        "This page is written by `make scoreboard` from the results of `tests/scoreboard/` (one test module per "
        "row, on DynamoDB Local); nothing in it is typed by hand. The same tests run in `make test`. Run one "
        "row yourself: `.venv/bin/python -m pytest -n 0 tests/scoreboard/<module>.py -v`.",
        "",
        f"Run: {run}. {len(rows)} reports; {len(replayed)} replayed, of which {holds} hold on TEMS and {caught} "
        f"fail against their broken variant; {len(rows) - len(replayed)} not replayable (TEMS has no such "
        "feature).",
        "",
        "| peer | report | what went wrong | the scenario on TEMS | against TEMS | against the broken variant "
        "| run |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for module, row in sorted(rows.items()):
        report = row["report"]
        scenario = report["missing"] and "—" or f"{report['scenario']} (`tests/scoreboard/{module}.py`)"
        broken = _broken_result(row.get("broken"))
        if report["broken"] and row.get("broken"):
            broken = f"{report['broken']} {broken}"
        lines.append("| " + " | ".join(_cell(text) for text in (
            report["peer"], f"[{report['issue']}]({report['url']})", report["wrong"], scenario,
            _tems_result(row.get("tems")), broken, run)) + " |")
    return "\n".join(lines) + "\n"


def write(path: Path, results: list[dict]) -> None:
    path.write_text(render(results, run_at=datetime.now(UTC), commit=run_commit(path)), encoding="utf-8")
