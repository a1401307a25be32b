"""The per-user write limit: at most ``TEMS_WRITE_RATE`` unsafe requests a minute per person, counted in DynamoDB.

The app runs on many servers, so the count cannot live in a process: it is one counter item per user per
minute window, moved by one conditional UpdateItem (``ADD n 1`` only while ``n < limit``). The database
decides; the refused update is the answer. Each window's item carries a TTL and so deletes itself.

A botocore retry of an update whose answer was lost counts that request twice: the person is limited one
request early, never one late, which is the safe side for an abuse limit. Windows are fixed minutes, so a burst
straddling a boundary may reach twice the limit within sixty seconds; a sliding window would cost a read or a
second item per request for no real gain against the abuse this stops (hundreds of writes a minute).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from pynamodb.attributes import NumberAttribute, TTLAttribute
from pynamodb.exceptions import UpdateError

from tems.api import problem
from tems.clock import utcnow
from tems.dynamo import TableModel
from tems.identity import user_key
from tems.transactions import is_conditional_check_failed

logger = logging.getLogger(__name__)

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WINDOW_SECONDS = 60
# Kept a little past its window so a slow clock on one server still finds the window it is counting in.
COUNTER_TTL = timedelta(minutes=5)


class WriteRateCounter(TableModel):
    """``WRITERATE#<user key>`` / ``MINUTE#<unix minute>``: how many unsafe requests the user made in it."""

    n = NumberAttribute(default=0)
    expires_at = TTLAttribute()

    @classmethod
    def key_for(cls, user_id: str, window: int) -> tuple[str, str]:
        return f"WRITERATE#{user_id}", f"MINUTE#{window}"


@dataclass(frozen=True)
class Refusal:
    retry_after: int  # seconds until the window that refused ends


def write_rate_take(*, user_id: str, limit: int, now: datetime | None = None) -> Refusal | None:
    """Count one unsafe request of ``user_id``; a Refusal when the minute's ``limit`` is already used up."""
    now = now or utcnow()
    epoch = int(now.timestamp())
    window = epoch // WINDOW_SECONDS
    counter = WriteRateCounter(*WriteRateCounter.key_for(user_id, window))
    window_end = datetime.fromtimestamp((window + 1) * WINDOW_SECONDS, tz=UTC)
    try:
        counter.update(
            actions=[WriteRateCounter.n.add(1), WriteRateCounter.expires_at.set(window_end + COUNTER_TTL)],
            condition=WriteRateCounter.n.does_not_exist() | (WriteRateCounter.n < limit),
        )
    except UpdateError as error:
        if not is_conditional_check_failed(error):
            raise
        return Refusal(retry_after=max(1, (window + 1) * WINDOW_SECONDS - epoch))
    return None


def _refused(request: HttpRequest, refusal: Refusal, limit: int) -> HttpResponse:
    detail = (f"Too many changes: at most {limit} a minute per person. "
              f"Try again in {refusal.retry_after} second{'s' if refusal.retry_after != 1 else ''}.")
    if request.path.startswith("/api/"):
        response = problem(429, detail, code="rate_limited", retry_after=refusal.retry_after)
    else:
        template = "429.html#refusal" if getattr(request, "htmx", False) else "429.html"
        response = render(request, template, {"detail": detail}, status=429)
        if getattr(request, "htmx", False):
            # The fragment goes to the top of the page, whatever the form aimed at (base.html lets 429 swap).
            response["HX-Retarget"] = "#main"
            response["HX-Reswap"] = "afterbegin"
    response["Retry-After"] = str(refusal.retry_after)
    return response


class WriteRateMiddleware:
    """429 past ``settings.TEMS_WRITE_RATE`` unsafe requests per minute per logged-in user (0: no limit).

    Anonymous requests are not counted here (the log-in throttle guards those). Logging out is never refused.
    If the counter cannot be written (DynamoDB unreachable) the request goes on: the write it guards needs the
    same database and fails or succeeds on its own, and an abuse limit must not turn a hiccup into an outage.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.TEMS_WRITE_RATE
        if (limit and request.method in UNSAFE_METHODS and request.user.is_authenticated
                and request.path != reverse("logout")):
            try:
                refusal = write_rate_take(user_id=user_key(request.user), limit=limit)
            except Exception:  # noqa: BLE001 - see the class docstring: fail open, but say so
                logger.exception("write-rate counter unavailable; request let through")
                refusal = None
            if refusal is not None:
                return _refused(request, refusal, limit)
        return self.get_response(request)
