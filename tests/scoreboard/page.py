"""docs/SCOREBOARD.md, written from a run's results (tests/scoreboard/conftest.py collects them): one row per
report, its result against TEMS and against the broken variant that reproduces the peer's bug."""

from __future__ import annotations

import json
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


def run_commit(*outputs: Path) -> str:
    """The commit the run tested, marked when the checkout differed from it (the run's own outputs aside)."""
    commit = _git("rev-parse", "--short=12", "HEAD").strip() or "unknown"
    own = set()
    for output in outputs:
        try:
            own.add(str(output.resolve().relative_to(REPOSITORY)))
        except ValueError:
            pass  # written outside the checkout
    changed = [line for line in _git("status", "--porcelain", "--untracked-files=no").splitlines()
               if line[3:] not in own]
    return f"{commit} + uncommitted changes" if changed else commit


def _tems_result(result: dict | None) -> tuple[str, str]:
    """(verdict, what was seen) of a scenario's run against TEMS."""
    if result is None:
        return "not run", ""
    return {
        "passed": ("passes", f"{result['seconds']} s"),
        "failed": ("FAILS", result["message"]),
        "skipped": ("not replayed", result["message"]),
    }.get(result["outcome"], (result["outcome"], result["message"]))


def _broken_result(result: dict | None) -> tuple[str, str]:
    """(verdict, what was seen) of a scenario's run against its broken variant."""
    if result is None:
        return "none", "no such feature to break"
    return {
        "xfailed": ("fails, as it must", result["message"]),
        "xpassed": ("PASSES", "the scenario cannot tell the broken variant from TEMS"),
        "failed": ("ERROR", result["message"]),
        "skipped": ("not run", result["message"]),
    }.get(result["outcome"], (result["outcome"], result["message"]))


def scoreboard(results: list[dict], *, run_at: datetime, commit: str) -> dict[str, Any]:
    """The run as the page and the lab show it: one row per report, in module order."""
    by_module: dict[str, dict] = {}
    for result in results:
        by_module.setdefault(result["module"], {"report": result["report"]})[result["variant"]] = result
    rows = []
    for module, found in sorted(by_module.items()):
        report = found["report"]
        tems, tems_seen = _tems_result(found.get("tems"))
        broken, broken_seen = _broken_result(found.get("broken"))
        rows.append({**report, "module": f"tests/scoreboard/{module}.py", "tems": tems, "tems_seen": tems_seen,
                     "broken_result": broken, "broken_seen": broken_seen})
    replayed = [row for row in rows if not row["missing"]]
    return {"run_at": f"{run_at:%Y-%m-%d %H:%M} UTC", "commit": commit, "rows": rows, "reports": len(rows),
            "replayed": len(replayed), "hold": sum(row["tems"] == "passes" for row in replayed),
            "caught": sum(row["broken_result"] == "fails, as it must" for row in replayed)}


def render(board: dict[str, Any]) -> str:
    run = f"{board['run_at']}, {board['commit']}"
    lines = [
        "# Correctness scoreboard: other event systems' bugs, replayed against TEMS",
        "",
        "Each row is a failure that real users reported against an event or ticketing system a university might "
        "choose instead of TEMS. The same situation is built on TEMS through its own entry points, at the "
        "concurrency or fault that caused it (simultaneous taps, a relay killed mid-batch, a lost answer, two "
        "doors at once), and what the reporter expected is asserted exactly. Each scenario also runs against a "
        "broken variant of TEMS that brings the peer's bug back (a read-then-write, a mail sent outside the "
        "transaction, a count kept beside the data, a LIFO pick): it must fail there, or the scenario could not "
        "tell the difference.",
        "",
        "This page is written by `make scoreboard` from the results of `tests/scoreboard/` (one test module per "
        "row, on DynamoDB Local); nothing in it is typed by hand. The same tests run in `make test`. Run one "
        "row yourself: `.venv/bin/python -m pytest -n 0 -rxX <module> -v`.",
        "",
        f"Run: {run}. {board['reports']} reports; {board['replayed']} replayed, of which {board['hold']} hold on "
        f"TEMS and {board['caught']} fail against their broken variant; {board['reports'] - board['replayed']} not "
        "replayable (TEMS has no such feature).",
        "",
        "| peer | report | what went wrong | the scenario on TEMS | against TEMS | against the broken variant "
        "| run |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in board["rows"]:
        scenario = "—" if row["missing"] else f"{row['scenario']} (`{row['module']}`)"
        tems = f"**{row['tems']}**" + (f": {row['tems_seen']}" if row["tems_seen"] else "")
        broken = (f"{row['broken']} " if row["broken"] else "") + f"**{row['broken_result']}**" + (
            f": {row['broken_seen']}" if row["broken_seen"] else "")
        lines.append("| " + " | ".join(_cell(text) for text in (
            row["peer"], f"[{row['issue']}]({row['url']})", row["wrong"], scenario, tems, broken, run)) + " |")
    return "\n".join(lines) + "\n"


def write(path: Path, results: list[dict], *, lab_copy: Path | None = None) -> None:
    """The page at ``path``; with ``lab_copy``, the same rows as JSON for the lab's page (which ships without
    docs/)."""
    outputs = (path,) if lab_copy is None else (path, lab_copy)
    board = scoreboard(results, run_at=datetime.now(UTC), commit=run_commit(*outputs))
    path.write_text(render(board), encoding="utf-8")
    if lab_copy is not None:
        lab_copy.write_text(json.dumps(board, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
