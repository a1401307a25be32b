"""Answers shared by the pages of every app."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect


def after_save(request: HttpRequest, url: str) -> HttpResponse:
    """Send the browser on to ``url`` after a form post: htmx is told to navigate with HX-Redirect (a followed
    redirect's whole page would be swapped into the form's region), a plain post gets the usual redirect."""
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


def conflict_status(request: HttpRequest, conflict: object) -> int:
    # htmx only swaps 2xx answers, so a conflict panel travels as 200 to it and as 409 to a plain form post.
    return 409 if conflict and not request.htmx else 200
