"""Helpers shared by the JSON API: problem+json (RFC 9457) errors, body parsing and access decorators."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from django import forms
from django.core.exceptions import RequestDataTooBig
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, JsonResponse

from tems.errors import DomainError
from tems.text import displayable, unsafe_text_problem

PROBLEM_CONTENT_TYPE = "application/problem+json"
JSON_CONTENT_TYPE = "application/json"


def problem(status: int, detail: str, *, title: str | None = None, **extra: Any) -> JsonResponse:
    body = {"type": "about:blank", "title": title or HTTPStatus(status).phrase, "status": status, "detail": detail}
    body.update({k: v for k, v in extra.items() if v not in (None, {}, [])})
    return JsonResponse(body, status=status, content_type=PROBLEM_CONTENT_TYPE, encoder=DjangoJSONEncoder)


def problem_from_error(error: DomainError) -> JsonResponse:
    response = problem(error.status, error.detail, code=error.code, errors=error.errors, **error.extra)
    if documented := error.extra.get("type"):
        # The problem type's page, for clients that read headers rather than the body (RFC 8288).
        response["Link"] = f'<{documented}>; rel="describedby"'
    if error.code == "busy" or "retry_after" in error.extra:
        response["Retry-After"] = str(error.extra.get("retry_after", 1))
    return response


def json_response(data: Any, *, status: int = 200) -> JsonResponse:
    return JsonResponse(data, status=status, encoder=DjangoJSONEncoder, safe=not isinstance(data, list))


# A TEMS body is a flat object of fields; nesting deeper than this is an attack, not a request. Checked before
# json.loads, whose recursive parser would otherwise raise RecursionError (or exhaust a thread's C stack).
MAX_JSON_DEPTH = 20
# Longer than any id, count or timestamp we take; Python refuses to parse integers over 4,300 digits anyway.
MAX_NUMBER_CHARS = 40

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


class _BadNumber(ValueError):
    pass


def _number(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse_bounded(literal: str) -> Any:
        if len(literal) > MAX_NUMBER_CHARS:
            raise _BadNumber(f"a number of {len(literal)} characters (at most {MAX_NUMBER_CHARS})")
        value = parse(literal)
        if isinstance(value, float) and not math.isfinite(value):
            raise _BadNumber(f"{literal[:20]} is out of range")
        return value

    return parse_bounded


def _no_constant(name: str) -> Any:
    raise _BadNumber(f"{name} is not JSON")


def _check_depth(text: str) -> None:
    depth = 0
    # Brackets inside strings do not nest; an unterminated string is left for json.loads to report.
    for bracket in _BRACKETS.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            raise DomainError("invalid", f"The request body is nested too deeply (at most {MAX_JSON_DEPTH} levels).")


def _unsafe_strings(data: Any) -> dict[str, list[str]]:
    """{top-level field: [problem]} for every string anywhere (keys too) that cannot be stored."""
    problems: dict[str, list[str]] = {}
    for field, value in data.items():
        stack = [field, value]
        while stack:
            current = stack.pop()
            if isinstance(current, dict):
                stack.extend(current.keys())
                stack.extend(current.values())
            elif isinstance(current, list):
                stack.extend(current)
            elif isinstance(current, str) and (problem := unsafe_text_problem(current)):
                problems[displayable(field)] = [problem]
                break
    return problems


def loads_json(raw: bytes) -> Any:
    """Parse a request body as JSON within TEMS's bounds, or DomainError('invalid') saying what is wrong."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DomainError("invalid", f"The request body is not UTF-8: {error}.") from None
    _check_depth(text)
    try:
        return json.loads(text, parse_int=_number(int), parse_float=_number(float), parse_constant=_no_constant)
    except _BadNumber as error:
        raise DomainError("invalid", f"The request body holds an unacceptable number: {error}.") from None
    except json.JSONDecodeError as error:
        raise DomainError("invalid", f"The request body is not valid JSON: {error}.") from None


def _body(request: HttpRequest) -> bytes:
    try:
        return request.body or b""
    except RequestDataTooBig:
        raise DomainError("too_large", "The request body is too large.") from None


def parse_json_object(request: HttpRequest) -> dict[str, Any]:
    """The request body as a JSON object of storable values, or a DomainError that says what is wrong with it:
    'unsupported_media_type' (415) unless it is sent as application/json, 'too_large' (413) past
    DATA_UPLOAD_MAX_MEMORY_SIZE, 'invalid' (400) for bad JSON, deep nesting, huge numbers, NUL or lone surrogates.
    """
    # Checked before reading: a multipart body has already been consumed by the CSRF check, and reading it again
    # raises. No type and no body at all is a missing body (400), not a wrong type.
    if request.content_type != JSON_CONTENT_TYPE and (request.content_type or _body(request)):
        raise DomainError("unsupported_media_type",
                          f"Send the body as {JSON_CONTENT_TYPE}, not {request.content_type or 'without a type'}.")
    data = loads_json(_body(request))
    if not isinstance(data, dict):
        raise DomainError("invalid", "The request body must be a JSON object.")
    if problems := _unsafe_strings(data):
        raise DomainError("invalid", "Some text cannot be stored: " + "; ".join(
            f"{field}: {' '.join(messages)}" for field, messages in problems.items()), errors=problems)
    return data


_ETAG = re.compile(r'^\s*"(\d{1,12})"\s*$')


def if_match_version(request: HttpRequest, error_class: type[DomainError] = DomainError) -> int:
    """The version named by the request's ``If-Match`` (one ETag as GET sent it, e.g. ``"3"``): 'precondition_required'
    (428) without one, so no edit is made blind; 'invalid' (400) for anything else."""
    try:
        return _if_match(request.headers.get("If-Match"))
    except DomainError as error:
        raise error_class(error.code, error.detail) from None


def _if_match(if_match: str | None) -> int:
    if not if_match:
        raise DomainError("precondition_required",
                          'Send If-Match: "<version>" with the ETag you read, so no one else\'s change is lost.')
    match = _ETAG.match(if_match)
    if not match:
        raise DomainError("invalid", f'If-Match must be one ETag as sent by GET, e.g. "3"; got {if_match[:40]!r}.')
    return int(match.group(1))


def with_etag(response: HttpResponse, version: int) -> HttpResponse:
    response["ETag"] = f'"{int(version)}"'
    return response


def _json_type(field: forms.Field) -> tuple[tuple[type, ...], str]:
    if isinstance(field, forms.BooleanField):
        return (bool,), "true or false"
    if isinstance(field, forms.IntegerField):
        return (int,), "a whole number"
    if isinstance(field, (forms.FloatField, forms.DecimalField)):
        return (int, float), "a number"
    if isinstance(field, forms.DateTimeField):
        return (str,), "an ISO 8601 date-time string"
    return (str,), "a string"


def _json_name(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def parse_form(request: HttpRequest, form_class: type[forms.Form], error_class: type[DomainError] = DomainError,
               *, defaults: dict[str, Any] | None = None, **form_kwargs: Any) -> forms.Form:
    """The JSON body validated by a Django form, the same form the page uses; DomainError('invalid') (of
    ``error_class``) names each field that is wrong.

    Each field must arrive as its own JSON type (``null`` counts as absent): a form would otherwise str() a
    list into "['x']", and JSON's true is a Python int. ``defaults`` fill the fields the body leaves out (or
    sends as ``null``): a partial edit keeps them.
    """
    data = parse_json_object(request)
    # ``defaults``: the values of fields the body leaves out (a partial edit keeps them as stored).
    form = form_class(data={**(defaults or {}), **{name: value for name, value in data.items() if value is not None}},
                      **form_kwargs)
    errors = {}
    for name, field in form.fields.items():
        value = data.get(name)
        allowed, expected = _json_type(field)
        if value is not None and (not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed)):
            errors[name] = [f"Must be {expected}, not {_json_name(value)}."]
    if errors:
        summary = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
        raise error_class("invalid", f"Invalid fields: {summary}", errors=errors)
    if not form.is_valid():
        raise invalid_form(form, error_class)
    return form


def form_errors(form) -> dict[str, list[str]]:
    return {name: [str(message) for message in messages] for name, messages in form.errors.items()}


def invalid_form(form, error_class: type[DomainError] = DomainError) -> DomainError:
    """A 400 that names each invalid field, built from a bound Django form."""
    errors = form_errors(form)
    summary = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
    return error_class("invalid", f"Invalid fields: {summary}", errors=errors)


def api_view(*methods: str) -> Callable:
    """Method check, session authentication (401 as problem+json) and domain errors mapped to statuses. Who may
    call the route beyond that is declared in tems.permissions.ROUTES."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in methods:
                response = problem(405, f"{request.method} is not allowed here; use {', '.join(methods)}.")
                response["Allow"] = ", ".join(methods)
                return response
            if not request.user.is_authenticated:
                return problem_from_error(
                    DomainError("unauthenticated", "Log in first: this API uses the same session as the web pages."))
            try:
                return view(request, *args, **kwargs)
            except DomainError as error:
                return problem_from_error(error)

        return wrapper

    return decorator
