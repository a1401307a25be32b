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
