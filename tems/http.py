"""Answers shared by the pages of every app."""

from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect


def said_once(request: HttpRequest, text: str) -> None:
    """Say ``text`` after a tap, on its first answer and on a replay alike, unless it is already waiting to be
    shown. A double click sends the tap twice: the browser shows the second answer (a replay) and may drop the
    first one's, and with it the first answer's message; the replay then says it, once."""
    pending = messages.get_messages(request)
    already = any(message.message == text for message in pending)
    pending.used = False  # looked at, not shown: the next page shows them
    if not already:
        messages.success(request, text)


def after_save(request: HttpRequest, url: str) -> HttpResponse:
    """Send the browser on to ``url`` after a form post: htmx is told to navigate (a followed redirect's whole
    page would be swapped into the form's region), a plain post gets the usual redirect."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


def conflict_status(request: HttpRequest, conflict: object) -> int:
    # 409 to htmx too: the htmx-config in base.html swaps a 409's conflict panel like a success.
    return 409 if conflict else 200


class LoginRedirectMiddleware:
    """A page that needs a log-in, reached by htmx or by a form post, sends the whole browser to the log-in page
    and back to the page the person was on afterwards.

    ``login_required`` answers 302 to ``LOGIN_URL?next=<this request's path>``. For htmx that redirect is
    followed inside the XHR and the log-in page lands inside the swapped card; and for a POST, ``next`` is a
    URL that only takes POST, so logging in ends on a 405. htmx is told to navigate instead (HX-Redirect), and
    ``next`` becomes the page the tap came from (``HX-Current-URL``, or the Referer of a plain post).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 302 or (not request.htmx and request.method == "GET"):
            return response
        target = urlsplit(response["Location"])
        if target.path != urlsplit(resolve_url(settings.LOGIN_URL)).path:
            return response
        query = [(name, value) for name, value in parse_qsl(target.query) if name != REDIRECT_FIELD_NAME]
        came_from = self._page_came_from(request)
        if came_from:
            query.append((REDIRECT_FIELD_NAME, came_from))
        url = urlunsplit(target._replace(query=urlencode(query)))
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)

    @staticmethod
    def _page_came_from(request: HttpRequest) -> str | None:
        if request.htmx:
            page = request.htmx.current_url
        elif request.method == "GET":
            page = request.get_full_path()
        else:
            page = request.headers.get("Referer")
        if not page or not url_has_allowed_host_and_scheme(page, allowed_hosts={request.get_host()},
                                                            require_https=request.is_secure()):
            return None
        parts = urlsplit(page)
        return urlunsplit(("", "", parts.path or "/", parts.query, ""))
