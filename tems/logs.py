"""Every log line in one shape: JSON lines in production, readable columns on a developer's terminal.

structlog renders both TEMS's own structured lines (``tems.telemetry``) and every standard-library record
(Django, botocore, the app's ``logging.getLogger``), so a line from anywhere carries the time, the level, the
logger and the request id of the request it was written for. In JSON, a line's ``metrics`` become CloudWatch's
Embedded Metric Format: CloudWatch Logs extracts them as metrics from the line itself.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import structlog

from tems import telemetry

JSON = "json"
CONSOLE = "console"
FORMATS = (JSON, CONSOLE)


def _add_request_id(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    request_id = telemetry.current_request_id()
    if request_id is not None:
        event_dict.setdefault("request_id", request_id)
    return event_dict


def embed_metrics(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` (name -> value) and ``label`` become an EMF document: the ``_aws`` directive and one root member
    per metric, with the dimension set ``[]``, or ``["Label"]`` when the line is one label's counts."""
    metrics = event_dict.pop("metrics", None)
    label = event_dict.pop("label", None)
    if not metrics:
        return event_dict
    dimensions = [[telemetry.LABEL]] if label is not None else [[]]
    event_dict["_aws"] = {
        "Timestamp": int(time.time() * 1000),
        "CloudWatchMetrics": [{
            "Namespace": telemetry.NAMESPACE, "Dimensions": dimensions,
            "Metrics": [{"Name": name, "Unit": telemetry.UNITS.get(name, "Count")} for name in metrics],
        }],
    }
    if label is not None:
        event_dict[telemetry.LABEL] = label
    event_dict.update(metrics)
    return event_dict


def _shared_processors() -> list:
    return [
        _add_request_id,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def _lighter_records() -> None:
    """Records stop collecting what no JSON line shows: the caller's file and line (a walk up the stack on every
    call), the thread and the process. Every request writes a line, so this is paid per request (the logging
    HOWTO's "Optimization" section names these switches). Only for JSON: on a developer's terminal and in test
    reports the caller's file and line stay."""
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging.logAsyncioTasks = False


def formatter(log_format: str = JSON) -> structlog.stdlib.ProcessorFormatter:
    """The ``logging`` formatter of the console handler (settings.LOGGING names it), which also configures
    structlog to hand its lines to ``logging``: one handler, one format, whoever logs."""
    if log_format not in FORMATS:
        raise ValueError(f"TEMS_LOG_FORMAT must be one of {', '.join(FORMATS)}, got {log_format!r}.")
    if log_format == JSON:
        _lighter_records()
    structlog.configure(
        processors=[*_shared_processors(), structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        # structlog's own bound logger is cheaper per call than its stdlib proxy; it filters nothing, the
        # standard-library levels (settings.LOGGING) decide what is written.
        wrapper_class=structlog.make_filtering_bound_logger(logging.NOTSET),
        cache_logger_on_first_use=True,
    )
    if log_format == JSON:
        rendering = [embed_metrics, structlog.processors.format_exc_info,
                     structlog.processors.JSONRenderer(default=str)]
    else:
        rendering = [structlog.dev.ConsoleRenderer()]
    return structlog.stdlib.ProcessorFormatter(
        # A standard-library record gets what a structlog line has, plus Django's status code where it says one.
        foreign_pre_chain=[*_shared_processors(), structlog.stdlib.ExtraAdder(allow=["status_code"])],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *rendering],
    )
