"""Filters for the LOGGING setting."""

import logging


class RefusalsOnOneLine(logging.Filter):
    """A 403 or 404 is the app answering as designed (a student on a staff page, a stale link), not a fault:
    ``django.request`` logs it with the exception's traceback, which buries real errors. Keep its one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) in (403, 404):
            record.exc_info = None
            record.exc_text = None
        return True


class IdleRelayPassesLeftOut(logging.Filter):
    """On a developer's terminal, an outbox relay pass that found nothing due is left out: ``make run`` relays
    every two seconds, and its lines would bury the requests'. Production keeps them (their lag of 0 is a data
    point that says the relay runs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        line = record.msg
        return not (isinstance(line, dict) and line.get("event") == "outbox_relay"
                    and not (line.get("delivered") or line.get("failed") or line.get("skipped")))
