"""The size DynamoDB bills an item by, computed from the item in DynamoDB's JSON (``{"name": {"S": "..."}}``).

The one item-size function of TEMS: the capacity model charges units by it, and the item-size tests and the
registration floor bench hold the hot path's items under 1 KB with it.

A write costs one write unit per started KB of the item (two in a transaction), so "under 1 KB" is the line
worth watching on a hot path. The rule is AWS's ("DynamoDB item sizes and formats" in the developer guide): the
UTF-8 length of every attribute name plus the size of its value, where

- a string is its UTF-8 length and a binary its raw length (base64 on the wire, decoded here);
- a number is one byte per two significant digits (leading and trailing zeros trimmed) plus one byte. The guide
  names no byte for the sign, so a negative number is as large as its magnitude;
- a boolean or null is one byte;
- a list or map is three bytes plus, per element, one byte and the element (a map's element also its name);
- a set (SS, NS, BS) is its elements, each sized as a scalar of its type: the guide names no overhead for sets.
"""

from __future__ import annotations

import base64
from decimal import Decimal
from typing import Any

KB = 1024


def item_size(item: dict[str, dict[str, Any]] | None) -> int:
    """Bytes DynamoDB counts for ``item`` (attribute names and values); 0 for no item."""
    return sum(len(name.encode()) + value_size(value) for name, value in (item or {}).items())


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
    significant = "".join(map(str, Decimal(text).as_tuple().digits)).strip("0")
    return (len(significant) + 1) // 2 + 1


def _bytes(data: bytes | str) -> bytes:
    return data if isinstance(data, bytes) else base64.b64decode(data)
