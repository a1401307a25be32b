"""Helpers shared by the JSON API: problem+json (RFC 9457) errors, body parsing and access decorators."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, JsonResponse

from tems.errors import DomainError

PROBLEM_CONTENT_TYPE = "application/problem+json"


def problem(status: int, detail: str, *, title: str | None = None, **extra: Any) -> JsonResponse:
    body = {"type": "about:blank", "title": title or HTTPStatus(status).phrase, "status": status, "detail": detail}
    body.update({k: v for k, v in extra.items() if v not in (None, {}, [])})
    return JsonResponse(body, status=status, content_type=PROBLEM_CONTENT_TYPE, encoder=DjangoJSONEncoder)


def problem_from_error(error: DomainError) -> JsonResponse:
    response = problem(error.status, error.detail, code=error.code, errors=error.errors, **error.extra)
    if error.code == "busy" or "retry_after" in error.extra:
        response["Retry-After"] = str(error.extra.get("retry_after", 1))
    return response


def json_response(data: Any, *, status: int = 200) -> JsonResponse:
    return JsonResponse(data, status=status, encoder=DjangoJSONEncoder, safe=not isinstance(data, list))


def parse_json_object(request: HttpRequest) -> dict[str, Any]:
    """The request body as a JSON object, or a DomainError('invalid') that says what is wrong with it."""
    try:
        data = json.loads(request.body or b"")
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DomainError("invalid", f"The request body is not valid JSON: {error}.") from None
    if not isinstance(data, dict):
        raise DomainError("invalid", "The request body must be a JSON object.")
    return data


def form_errors(form) -> dict[str, list[str]]:
    return {name: [str(message) for message in messages] for name, messages in form.errors.items()}


def invalid_form(form, error_class: type[DomainError] = DomainError) -> DomainError:
    """A 400 that names each invalid field, built from a bound Django form."""
    errors = form_errors(form)
    summary = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
    return error_class("invalid", f"Invalid fields: {summary}", errors=errors)


def api_view(*methods: str, staff: bool = False) -> Callable:
    """Method check, session authentication (401/403 as problem+json) and domain errors mapped to statuses."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in methods:
                response = problem(405, f"{request.method} is not allowed here; use {', '.join(methods)}.")
                response["Allow"] = ", ".join(methods)
                return response
            if not request.user.is_authenticated:
                return problem(401, "Log in first: this API uses the same session as the web pages.")
            if staff and not request.user.is_staff:
                return problem(403, "Only staff may do this.")
            try:
                return view(request, *args, **kwargs)
            except DomainError as error:
                return problem_from_error(error)

        return wrapper

    return decorator
