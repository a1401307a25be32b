"""The one shape every id that travels in a URL or a key has: checked before any DynamoDB request.

Event ids (12 hex digits), registration ids (32 hex digits), SKUs and the lab's ``lab-...`` ids all fit it.
DynamoDB refuses a key over 2,048 bytes with a ValidationException, and a ``#`` would let an id reach into
another item's key (``ITEM#A#...``), so nothing else is let through: a path id that does not fit is 404, a
body id is 400.
"""

from __future__ import annotations

import re

from django.core.validators import RegexValidator

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
