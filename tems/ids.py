"""The one shape every id that travels in a URL or a key has: checked before any DynamoDB request.

Event ids (12 hex digits), registration ids (32 hex digits), SKUs and the lab's ``lab-...`` ids all fit it.
DynamoDB refuses a key over 2,048 bytes with a ValidationException, and a ``#`` would let an id reach into
another item's key (``ITEM#A#...``), so nothing else is let through: a path id that does not fit is 404, a
body id is 400.
"""

from __future__ import annotations

import functools
import re

from django.core.validators import RegexValidator
from django.urls import get_script_prefix, get_urlconf, reverse

ID_REGEX = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
_ID = re.compile(ID_REGEX)
ID_HELP = "Use 1-64 letters, digits, dots, dashes or underscores, starting with a letter or digit."

id_validator = RegexValidator(rf"^{ID_REGEX}\Z", ID_HELP)


def is_valid_id(value: object) -> bool:
    return isinstance(value, str) and _ID.fullmatch(value) is not None


class IdConverter:
    """``<id:name>`` in a route: a URL whose id does not have the shape does not match, so it is a 404."""

    regex = ID_REGEX

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


def route_template(viewname: str, *names: str) -> str:
    """The path of ``viewname`` with each argument in ``names`` left as the placeholder ``route_placeholder(i)``,
    resolved once per URL configuration and script prefix (a registration's answer holds two URLs, and Django's
    ``reverse`` looks the route up anew for each, on the write's path). The placeholders fit every converter
    of TEMS's routes (``id``, ``str``); whoever fills them in must pass only values their converter accepts."""
    return _route_template(viewname, names, get_urlconf(), get_script_prefix())


def route_placeholder(index: int) -> str:
    return f"TEMSROUTEARG{index}X"


@functools.lru_cache(maxsize=64)
def _route_template(viewname: str, names: tuple[str, ...], urlconf: str | None, prefix: str) -> str:
    return reverse(viewname, urlconf=urlconf, kwargs={name: route_placeholder(i) for i, name in enumerate(names)})


def id_path(viewname: str, **ids: str) -> str:
    """``reverse(viewname, kwargs=ids)`` for a route whose arguments are all ``<id:...>``. An id that does not
    have the shape gets Django's own ``reverse`` (and its NoReverseMatch)."""
    if not all(is_valid_id(value) for value in ids.values()):
        return reverse(viewname, kwargs=ids)
    path = route_template(viewname, *ids)
    for index, value in enumerate(ids.values()):
        path = path.replace(route_placeholder(index), value, 1)
    return path
