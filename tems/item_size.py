"""The size DynamoDB bills an item by, computed from the item in DynamoDB's JSON (``{"name": {"S": "..."}}``).

A write costs one write unit per started KB of the item (two in a transaction), so "under 1 KB" is the line
worth watching on a hot path. The rule is AWS's ("Item sizes and formats" in the DynamoDB developer guide):
the UTF-8 length of every attribute name plus the size of its value, where a string is its UTF-8 length, a
binary its length, a number about one byte per two significant digits plus one, a boolean or null one byte,
and a list or map three bytes plus one byte per element plus the elements.
"""

from __future__ import annotations

import base64
from decimal import Decimal
from typing import Any

KB = 1024


def item_size(item: dict[str, dict[str, Any]]) -> int:
    """Bytes DynamoDB counts for ``item`` (attribute names and values)."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def value_size(value: dict[str, Any]) -> int:
    """Bytes of one attribute value in DynamoDB's JSON (``{"S": ...}``, ``{"N": ...}``, ``{"M": {...}}``...)."""
    (kind, data), = value.items()
    if kind == "S":
        return len(data.encode())
    if kind == "N":
        return _number_size(data)
    if kind == "B":
        return len(_bytes(data))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(element.encode()) for element in data)
    if kind == "NS":
        return sum(_number_size(element) for element in data)
    if kind == "BS":
        return sum(len(_bytes(element)) for element in data)
    if kind == "L":
        return 3 + sum(1 + value_size(element) for element in data)
    if kind == "M":
        return 3 + sum(1 + len(name.encode()) + value_size(element) for name, element in data.items())
    raise ValueError(f"not a DynamoDB attribute value: {value!r}")


def _number_size(text: str) -> int:
    digits = Decimal(text).normalize().as_tuple().digits
    significant = str(int("".join(map(str, digits)) or "0")).rstrip("0") or "0"
    return (len(significant) + 1) // 2 + 1 + (1 if text.lstrip().startswith("-") else 0)


def _bytes(data: bytes | str) -> bytes:
    return data if isinstance(data, bytes) else base64.b64decode(data)
