"""Answers that hold for every route, whichever view, decorator or part of Django produced them."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

from django.http import HttpRequest, HttpResponse

from tems.api import PROBLEM_CONTENT_TYPE, problem

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
