"""Text that can never be stored, and a read-side guard for any that was stored before the rule.

A lone surrogate (``"\\ud800"``, which JSON can spell) is not a character: it cannot be encoded as UTF-8, so a
page showing it fails to render. NUL is refused because nothing a person types contains it and many tools
(C strings, PostgreSQL text, CSV readers) choke on it. Both are refused at input: ``unsafe_text_problem`` in
the JSON layer (tems.api); Django's form fields already refuse NUL, and a form post cannot carry a surrogate
(its bytes are decoded as UTF-8 with replacement). ``TextAttribute`` replaces any surrogate read back.
"""

from __future__ import annotations

import re

from pynamodb.attributes import UnicodeAttribute

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def unsafe_text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored, or None if it can."""
    if "\x00" in value:
        return "Null characters are not allowed."
    if _SURROGATE.search(value):
        return "Contains an invalid character (a lone UTF-16 surrogate)."
    return None


# Control characters a person cannot type into a free-text field (tab and line breaks are kept: a note or a reason
# may have lines).
_UNTYPABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff]")


def untypable(value: str) -> bool:
    """Whether ``value`` holds a character nobody types: what ``unsafe_text_problem`` refuses, or a control
    character other than tab and line breaks."""
    return unsafe_text_problem(value) is not None or _UNTYPABLE.search(value) is not None


def displayable(value: str) -> str:
    return _SURROGATE.sub(REPLACEMENT, value)


class TextAttribute(UnicodeAttribute):
    """A UnicodeAttribute that never hands a lone surrogate to a page (they are shown as U+FFFD)."""

    def deserialize(self, value: str) -> str:
        return displayable(super().deserialize(value))
