"""The answers of the inventory app, built in one place: the API's bodies and the current item and history a
refused edit carries (tems.merge), so every answer shows an item the same way."""

from __future__ import annotations

from inventory.models import InventoryChange, InventoryItem


def item_to_dict(item: InventoryItem) -> dict:
    """The API representation of an item."""
    return {
        "sku": item.sku,
        "name": item.name,
        "description": item.description,
        "quantity": int(item.quantity),
        "location": item.location,
        "version": int(item.version),
        "updated_at": item.updated_at.isoformat(),
        "updated_by": item.updated_by,
        "team": item.team,
    }


def change_to_dict(change: InventoryChange) -> dict:
    """The API representation of one history entry."""
    return {
        "version": int(change.version),
        "kind": change.kind,
        "changed_by": change.changed_by,
        "changed_at": change.changed_at.isoformat(),
        "reason": change.reason,
        "delta": None if change.delta is None else int(change.delta),
        "before": change.before_values or None,
        "after": change.after_values,
    }
