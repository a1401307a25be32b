"""One way to page through any list: one DynamoDB Query of one page per request, opaque signed cursors.

A cursor is DynamoDB's ``LastEvaluatedKey`` for the page just read, signed together with the list it belongs to
(``scope``), so a client can neither forge a start key nor carry a cursor from one list (or one person's list)
to another. A tampered, truncated or foreign cursor is a 400, never a 500 and never a scan.

Every list endpoint and page uses ``query_page`` and ``page_size``; nothing else reads a whole collection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core import signing
from django.http import HttpRequest, QueryDict

from tems.errors import DomainError

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 50
# A cursor is a key of at most two short strings (or four with an index); anything longer is not ours.
MAX_CURSOR_CHARS = 1024

_SALT = "tems.pagination.cursor"


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list and the cursor of the next one (None on the last page)."""

    items: list[T]
    next_cursor: str | None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def encode_cursor(last_key: dict[str, Any] | None, *, scope: str) -> str | None:
    """The opaque cursor for a page that ended at ``last_key`` (None when there is nothing after it)."""
    if not last_key:
        return None
    return signing.dumps({"s": scope, "k": last_key}, salt=_SALT, compress=True)


def decode_cursor(token: str | None, *, scope: str) -> dict[str, Any] | None:
    """The start key a cursor stands for, or None for the first page; DomainError('invalid') if it is not ours."""
    if token in (None, ""):
        return None
    if len(token) > MAX_CURSOR_CHARS:
        raise DomainError("invalid", "This cursor is not valid: start again from the first page.")
    try:
        payload = signing.loads(token, salt=_SALT)
    except signing.BadSignature:
        raise DomainError("invalid", "This cursor is not valid: start again from the first page.") from None
    if not isinstance(payload, dict) or payload.get("s") != scope or not isinstance(payload.get("k"), dict):
        raise DomainError("invalid", "This cursor belongs to another list: start again from the first page.")
    return payload["k"]


def start_key_string(start: dict[str, Any], attribute: str) -> str:
    """A string attribute of a cursor's start key, as DynamoDB (``{"S": ...}``) or PynamoDB hands it over: where a
    later page's key condition begins. DomainError('invalid') when the cursor holds no such string."""
    value = start.get(attribute)
    if isinstance(value, dict):
        value = value.get("S")
    if not isinstance(value, str):
        raise DomainError("invalid", "This cursor is not valid: start again from the first page.")
    return value


def page_size(raw: str | None, *, default: int = DEFAULT_PAGE_SIZE, maximum: int = MAX_PAGE_SIZE) -> int:
    """The ``?limit=`` a client asked for, within 1..maximum; DomainError('invalid') for anything else."""
    if raw in (None, ""):
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= maximum:
        raise DomainError("invalid", f"limit must be a whole number from 1 to {maximum}.")
    return int(raw)


def page_args(request: Any) -> dict[str, Any]:
    """The ``cursor`` and ``limit`` a list request asked for (``?cursor=&limit=``), for a selector's keywords.

    Raises DomainError('invalid') for a limit out of range; a bad cursor is refused by the selector's decode."""
    return {"cursor": request.GET.get("cursor"), "limit": page_size(request.GET.get("limit"))}


def query_page(query: Callable[..., Any], *query_args: Any, scope: str, cursor: str | None, limit: int,
               convert: Callable[[Any], T] = lambda item: item, **query_kwargs: Any) -> Page[T]:
    """One page of a PynamoDB ``Model.query`` / ``Index.query``: pass the bound method and its arguments,
    e.g. ``query_page(Event.by_start.query, Event.COLLECTION, Event.gsi1sk >= now, scope="events", ...)``.

    Exactly one Query request: ``limit`` bounds what DynamoDB reads, and the page's ``last_evaluated_key``
    becomes the next cursor. DynamoDB may hand back a key when the page ended exactly at the last item, so a
    client can meet one empty last page; it never skips or repeats an item, even when items are added between
    pages (the key is a position in the sort order, not an offset).
    """
    results = query(*query_args, limit=limit, last_evaluated_key=decode_cursor(cursor, scope=scope), **query_kwargs)
    items = [convert(item) for item in results]
    return Page(items=items, next_cursor=encode_cursor(results.last_evaluated_key, scope=scope))


def query_filtered_page(query: Callable[..., Any], *query_args: Any, model: Any, scope: str, cursor: str | None,
                        limit: int, **query_kwargs: Any) -> Page[Any]:
    """One page of a Query with a ``filter_condition``: exactly one request, whose ``limit`` bounds the items
    DynamoDB reads, so the page holds those of them the filter kept (maybe none) and the cursor goes on after the
    last one read. (``query_page`` would let PynamoDB send more requests until ``limit`` items pass the filter:
    unbounded when few do.) ``model`` turns the raw items into models.
    """
    results = query(*query_args, limit=limit, last_evaluated_key=decode_cursor(cursor, scope=scope), **query_kwargs)
    raw = next(results.page_iter)
    items = [model.from_raw_data(item) for item in raw.get("Items", [])]
    return Page(items=items, next_cursor=encode_cursor(results.page_iter.last_evaluated_key, scope=scope))


def next_page_url(request: HttpRequest, page: Page) -> str | None:
    """This request's URL with ``cursor`` set to the next page's (None on the last page)."""
    if page.next_cursor is None:
        return None
    params: QueryDict = request.GET.copy()
    params["cursor"] = page.next_cursor
    return request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
