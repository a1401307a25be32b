"""The per-user write limit: at most ``TEMS_WRITE_RATE`` unsafe requests a minute per person, counted in DynamoDB.

The app runs on many servers, so the count cannot live in a process: it is one counter item per user per
minute window, moved by one conditional update (``ADD n 1`` only while ``n < limit``). The database
decides; the refused update is the answer. Each window's item carries a TTL and so deletes itself.

The middleware sends that update on its own (one UpdateItem) before the view, except for a view marked
``@counts_own_writes``: its service puts the same update into the transaction it sends anyway
(``add_write_count``), so the count costs no request of its own and is taken only when the tap writes. A
refused count there raises ``WriteRateExceeded``, which the middleware answers exactly as its own refusal.

A botocore retry of an UpdateItem whose answer was lost counts that request twice: the person is limited one
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
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from tems.api import problem
from tems.clock import utcnow
from tems.dynamo import TableModel
from tems.identity import user_key
from tems.transactions import LabelledTransaction, TransactionCancelled, is_conditional_check_failed

logger = logging.getLogger(__name__)

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WINDOW_SECONDS = 60
# Kept a little past its window so a slow clock on one server still finds the window it is counting in.
COUNTER_TTL = timedelta(minutes=5)
# The counter's label in a service's own transaction (``add_write_count``).
WRITE_RATE_LABEL = "write_rate"
# Users refused in a window, remembered by this process (see ``_remember_refusal``); past this many it starts over.
MAX_REMEMBERED_REFUSALS = 10_000


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
    window: int = 0  # the unix minute whose count was used up


def _window(now: datetime) -> tuple[int, int, datetime]:
    """(unix minute, seconds left in it, its end) of ``now``."""
    epoch = int(now.timestamp())
    window = epoch // WINDOW_SECONDS
    return window, max(1, (window + 1) * WINDOW_SECONDS - epoch), datetime.fromtimestamp(
        (window + 1) * WINDOW_SECONDS, tz=UTC)


def _count_update(*, user_id: str, limit: int, now: datetime) -> tuple[WriteRateCounter, list[Action], Condition]:
    """The counter of ``now``'s window, and the actions and condition that count one request in it."""
    window, _, window_end = _window(now)
    counter = WriteRateCounter(*WriteRateCounter.key_for(user_id, window))
    actions = [WriteRateCounter.n.add(1), WriteRateCounter.expires_at.set(window_end + COUNTER_TTL)]
    return counter, actions, WriteRateCounter.n.does_not_exist() | (WriteRateCounter.n < limit)


def refusal_at(now: datetime) -> Refusal:
    window, retry_after, _ = _window(now)
    return Refusal(retry_after=retry_after, window=window)


def write_rate_take(*, user_id: str, limit: int, now: datetime | None = None) -> Refusal | None:
    """Count one unsafe request of ``user_id``; a Refusal when the minute's ``limit`` is already used up."""
    now = now or utcnow()
    counter, actions, condition = _count_update(user_id=user_id, limit=limit, now=now)
    try:
        counter.update(actions=actions, condition=condition)
    except UpdateError as error:
        if not is_conditional_check_failed(error):
            raise
        return refusal_at(now)
    return None


class WriteRateExceeded(Exception):
    """A service's own transaction was refused by the write limit (``add_write_count``); nothing was written.

    Not a DomainError on purpose: no view or decorator answers it, so it reaches ``WriteRateMiddleware``, which
    answers it as it answers its own refusal (the same 429, page or problem+json)."""

    def __init__(self, refusal: Refusal):
        super().__init__(f"write limit reached; retry after {refusal.retry_after} s")
        self.refusal = refusal


def add_write_count(transaction: LabelledTransaction, *, user_id: str, limit: int, now: datetime) -> None:
    """Count this write of ``user_id`` in ``transaction`` itself (labelled ``WRITE_RATE_LABEL``), under the same
    condition as the middleware's UpdateItem: the transaction is refused, whole, once the minute's ``limit`` is
    used up. Nothing is added when ``limit`` is 0 (no limit). A refused transaction wrote nothing, so a round sent
    again after a refusal counts once; the caller passes the cancellation to ``raise_if_write_rate_refused``."""
    if not limit:
        return
    counter, actions, condition = _count_update(user_id=user_id, limit=limit, now=now)
    transaction.update(WRITE_RATE_LABEL, counter, actions=actions, condition=condition)


def raise_if_write_rate_refused(cancelled: TransactionCancelled, *, now: datetime) -> None:
    """Raise WriteRateExceeded when the count ``add_write_count`` put in the cancelled transaction was refused."""
    if cancelled.failed(WRITE_RATE_LABEL):
        raise WriteRateExceeded(refusal_at(now)) from None


def counts_own_writes(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Mark a view whose service counts the request in its own transaction (``add_write_count``): the middleware
    then sends no count of its own. ``functools.wraps`` copies the mark, so the decorators may go in any order."""
    view.counts_own_writes = True  # type: ignore[attr-defined]
    return view


# user key -> the window this process saw refused. Within one window the count only grows, so a refusal stays
# true until the window ends: answering the person's next taps from it asks the database nothing it has not
# already answered. It spares the table what over-limit taps would otherwise send (a counted view's whole
# transaction, with the seat it touches), and another server simply asks the database once itself.
_refusals: dict[str, int] = {}


def _remember_refusal(user_id: str, refusal: Refusal) -> None:
    if len(_refusals) >= MAX_REMEMBERED_REFUSALS:
        _refusals.clear()
    _refusals[user_id] = refusal.window


def _remembered_refusal(user_id: str, now: datetime) -> Refusal | None:
    refusal = refusal_at(now)
    return refusal if _refusals.get(user_id) == refusal.window else None


def forget_refusals() -> None:
    """Start over with no remembered refusal (tests that reuse a user across limits)."""
    _refusals.clear()


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
    The count is taken once the view is known (``process_view``): a view marked ``@counts_own_writes`` counts in
    its own transaction, and its ``WriteRateExceeded`` is answered here (``process_exception``).
    If the counter cannot be written (DynamoDB unreachable) the request goes on: the write it guards needs the
    same database and fails or succeeds on its own, and an abuse limit must not turn a hiccup into an outage.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: Callable[..., HttpResponse], view_args: tuple,
                     view_kwargs: dict) -> HttpResponse | None:
        limit = settings.TEMS_WRITE_RATE
        if not (limit and request.method in UNSAFE_METHODS and request.user.is_authenticated
                and request.path != reverse("logout")):
            return None
        user_id = user_key(request.user)
        refusal = _remembered_refusal(user_id, utcnow())
        if refusal is None and not getattr(view_func, "counts_own_writes", False):
            try:
                refusal = write_rate_take(user_id=user_id, limit=limit)
            except Exception:  # noqa: BLE001 - see the class docstring: fail open, but say so
                logger.exception("write-rate counter unavailable; request let through")
                refusal = None
            if refusal is not None:
                _remember_refusal(user_id, refusal)
        return None if refusal is None else _refused(request, refusal, limit)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, WriteRateExceeded):
            return None
        _remember_refusal(user_key(request.user), exception.refusal)
        return _refused(request, exception.refusal, settings.TEMS_WRITE_RATE)
