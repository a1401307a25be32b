"""Reading what tems.telemetry writes: the JSON lines as production renders them, and the metrics in them."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from tems import logs


class JsonLines(logging.Handler):
    """Every record rendered by the production formatter (JSON, EMF) and parsed back."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(logs.formatter(logs.JSON))
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))

    def named(self, event: str) -> list[dict]:
        return [line for line in self.lines if line.get("event") == event]


@contextmanager
def captured_lines(logger_name: str = "") -> Iterator[JsonLines]:
    """The lines written inside, whatever the log format and level the settings chose."""
    handler = JsonLines()
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def emf_metrics(lines: list[dict], *, label: str | None = None) -> Counter:
    """The metric values CloudWatch would extract from ``lines``: with no dimension, or those of one ``label``."""
    totals: Counter = Counter()
    for line in lines:
        if "_aws" not in line:
            continue
        [directive] = line["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "TEMS"
        wanted = [["Label"]] if label is not None else [[]]
        if directive["Dimensions"] != wanted or (label is not None and line["Label"] != label):
            continue
        for metric in directive["Metrics"]:
            totals[metric["Name"]] += line[metric["Name"]]
    return totals
