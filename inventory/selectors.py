"""Reads of the inventory app. Anything an edit or a retry will act on is read strongly consistently."""

from __future__ import annotations

from collections.abc import Collection

from pynamodb.exceptions import DoesNotExist

from inventory.errors import InventoryError
from inventory.models import InventoryChange, InventoryItem, OperationMetrics
from tems.pagination import Page, query_page
from tems.permissions import NoSuchObject


def item_get(*, sku: str, consistent: bool = True) -> InventoryItem:
    """The item; strongly consistent by default, because an edit form must carry the latest version."""
    try:
        return InventoryItem.get(*InventoryItem.key_for(sku), consistent_read=consistent)
    except DoesNotExist:
        raise InventoryError("not_found", f"There is no inventory item with sku {sku!r}.") from None


def item_team(sku: str) -> str | None:
    """The id of the team that keeps the item (None: none, platform admins only); for tems.permissions, which
    raises NoSuchObject for an unknown sku."""
    try:
        return InventoryItem.get(*InventoryItem.key_for(sku), consistent_read=True, attributes_to_get=["team"]).team
    except DoesNotExist:
        raise NoSuchObject(sku) from None


def item_list(*, teams: Collection[str] | None = None) -> list[InventoryItem]:
    """Every item in sku order, from the collection index (eventually consistent, fine for a listing); with
    ``teams``, only the items those teams keep."""
    items = InventoryItem.by_sku.query(InventoryItem.COLLECTION)
    return [item for item in items if teams is None or item.team in teams]


def item_history(*, sku: str, after_version: int = 0, limit: int | None = None) -> list[InventoryChange]:
    """The item's changes newest first; with ``after_version``, only those made after that version."""
    return list(InventoryChange.query(
        InventoryItem.pk_for(sku),
        # A range, not "> CHANGE#n": the item's own METADATA sorts after every CHANGE# in this partition.
        InventoryChange.sk.between(InventoryChange.sk_for(after_version + 1), InventoryChange.LAST_SK),
        scan_index_forward=False,
        consistent_read=True,
        limit=limit,
    ))


def item_history_page(*, sku: str, cursor: str | None = None, limit: int) -> Page[InventoryChange]:
    """One page of the item's changes, newest first: one Query however long the history is.

    ``CHANGE#<zero-padded version>`` sorts by version, so reading the range backwards is newest first; the
    cursor is scoped to the item, so one item's cursor cannot page another's history.
    """
    return query_page(
        InventoryChange.query, InventoryItem.pk_for(sku),
        InventoryChange.sk.between(InventoryChange.sk_for(1), InventoryChange.LAST_SK),
        scope=f"history:{sku}", cursor=cursor, limit=limit, scan_index_forward=False, consistent_read=True,
    )


def metrics_list() -> list[OperationMetrics]:
    """The running totals of every inventory operation, by operation name."""
    return list(OperationMetrics.query(OperationMetrics.PK, consistent_read=True))
