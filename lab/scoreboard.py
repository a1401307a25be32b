"""The correctness scoreboard's last run, as the lab shows it: bugs reported against other event systems, each
replayed against TEMS and against a variant that brings the bug back. ``make scoreboard`` writes it here as
scoreboard.json beside docs/SCOREBOARD.md, from the results of tests/scoreboard/ (the image ships without docs/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LAST_RUN = Path(__file__).with_name("scoreboard.json")


def scoreboard_last_run(*, path: Path | None = None) -> dict[str, Any] | None:
    """The last run's rows and totals, or None if no run was recorded."""
    try:
        return json.loads((path or LAST_RUN).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
