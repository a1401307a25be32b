"""The base of each app's one domain error. Its ``code`` decides the HTTP status the API answers with (the table of
codes and reasons: docs/API.md, "Error codes")."""

from __future__ import annotations

from typing import Any

STATUS_BY_CODE = {
    "invalid": 400,
    "unauthenticated": 401,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "offer_expired": 409,  # a waitlist offer's time ran out before the accept (registrations.offers.services)
    "precondition_failed": 412,
    "too_large": 413,
    "unsupported_media_type": 415,
    "unprocessable": 422,
    "precondition_required": 428,
    "busy": 503,
}


class DomainError(Exception):
    """A refusal the person or client can act on; never a crash."""

    def __init__(self, code: str, detail: str, *, errors: dict[str, list[str]] | None = None, **extra: Any):
        if code not in STATUS_BY_CODE:
            raise ValueError(f"unknown domain error code {code!r}")
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.errors = errors or {}
        self.extra = extra

    @property
    def status(self) -> int:
        return STATUS_BY_CODE[self.code]
