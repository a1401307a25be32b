"""Answers that hold for every route, whichever view, decorator or part of Django produced them."""

from __future__ import annotations

import time
from collections.abc import Callable
from http import HTTPStatus

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.functional import empty

from tems import telemetry
from tems.api import PROBLEM_CONTENT_TYPE, problem
from tems.identity import known_user_key

API_PREFIX = "/api/"
# Headers of Django's own refusals that a client needs to act on; kept when the body becomes a problem.
_KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")
_DETAILS = {
    400: "The request could not be read (a malformed or oversized body).",
    404: "There is nothing at this address.",
    405: "This method is not allowed here.",
    413: "The request body is too large.",
    500: "Something went wrong on our side; nothing you sent was applied partially. Try again later.",
}


class ApiProblemMiddleware:
    """Two promises kept in one place:

    - ``HEAD`` is answered as ``GET`` without the body, so every GET route, page or API, takes it;
    - under ``/api/`` every error is problem+json, including Django's own (unknown route, 405 from a method
      decorator, an oversized or malformed body caught before any view, the 500 handler), which are HTML.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        head = request.method == "HEAD"
        if head:
            request.method = "GET"
        response = self.get_response(request)
        if head:
            request.method = "HEAD"
            if not response.streaming:
                # The length the GET would have, without its body (servers drop it too; this is for all of them).
                response["Content-Length"] = str(len(response.content))
                response.content = b""
        if (request.path.startswith(API_PREFIX) and response.status_code >= 400
                and response.get("Content-Type") != PROBLEM_CONTENT_TYPE):
            return self._as_problem(response)
        return response

    @staticmethod
    def _as_problem(response: HttpResponse) -> HttpResponse:
        status = response.status_code
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        converted = problem(status, _DETAILS.get(status, f"{phrase}."))
        for name in _KEPT_HEADERS:
            if response.has_header(name):
                converted[name] = response[name]
        return converted


class RequestLogMiddleware:
    """One log line per request, with its metrics (tems.telemetry), and its request id.

    The id is the client's ``X-Request-ID`` when well formed (a proxy's, or a retry's that wants its tries
    followed), else a new one; it is answered in the same header, and every log line and outbox message written
    for the request carries it. Outermost but for the health check, so it times and sees every answer,
    Django's own refusals included.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        # From META: building request.headers for one header costs more than the rest of the line.
        request_id = telemetry.request_id_from(request.META.get(telemetry.REQUEST_ID_META))
        with telemetry.scope("request", request_id=request_id, ask_capacity=settings.TEMS_LOG_CAPACITY) as current:
            current.fields.update(idempotency_key=None, replayed=False)
            response = self.get_response(request)
            response[telemetry.REQUEST_ID_HEADER] = request_id
            status = response.status_code
            if status in telemetry.ANSWERED_STATUSES:
                current.count(telemetry.answer_metric(status))
            if 500 <= status <= 599:
                current.count(telemetry.ANSWER_5XX)
            match = request.resolver_match
            current.fields.update(
                method=request.method, route=match.route if match is not None else None, path=request.path[:200],
                status=status, duration_ms=telemetry.elapsed_ms(started), user=_user_key_known(request),
            )
        return response


def _user_key_known(request: HttpRequest) -> str | None:
    """The user's immutable key if the request already read the user; reading it only for the log would cost
    every anonymous or user-less request a session and a user query."""
    user = getattr(request, "user", None)
    wrapped = getattr(user, "_wrapped", user)  # AuthenticationMiddleware's lazy object
    if wrapped is None or wrapped is empty or not wrapped.is_authenticated:
        return None
    return known_user_key(wrapped)
