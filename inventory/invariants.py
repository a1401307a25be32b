"""What must always hold for inventory items; ``manage.py check_invariants`` runs these on a table scan."""

from collections.abc import Iterator

from inventory.models import TRACKED_FIELDS, InventoryChange
from tems.invariants import TableSnapshot, invariant


def _fields(values) -> dict:
    values = values or {}
    return {name: int(values[name]) if name == "quantity" and name in values else values.get(name)
            for name in TRACKED_FIELDS}


def _history(snapshot: TableSnapshot, item: dict) -> list[dict]:
    changes = snapshot.with_sk_prefix(item["PK"], InventoryChange.PREFIX)
    return sorted(changes, key=lambda change: int(change["version"]))


@invariant("inventory quantities are never negative")
def quantities_not_negative(snapshot: TableSnapshot) -> Iterator[str]:
    for item in snapshot.of_entity("InventoryItem"):
        if item.get("quantity", 0) < 0:
            yield f"{item['PK']}: quantity {item['quantity']}"
    for change in snapshot.of_entity("InventoryChange"):
        if change.get("after", {}).get("quantity", 0) < 0:
            yield f"{change['PK']} {change['SK']}: recorded quantity {change['after']['quantity']}"


@invariant("inventory history versions are contiguous")
def history_contiguous(snapshot: TableSnapshot) -> Iterator[str]:
    for item in snapshot.of_entity("InventoryItem"):
        history = _history(snapshot, item)
        versions = [int(change["version"]) for change in history]
        if versions != list(range(1, int(item["version"]) + 1)):
            missing = sorted(set(range(1, int(item["version"]) + 1)) - set(versions))
            yield f"{item['PK']}: version {item['version']} but history holds {len(versions)} entries" + (
                f", missing {missing[:10]}" if missing else "")
        for older, newer in zip(history, history[1:]):
            if _fields(newer.get("before")) != _fields(older.get("after")):
                yield (f"{item['PK']}: change {newer['version']} starts from values "
                       f"change {older['version']} did not leave")
        for change in history:
            if change["SK"] != InventoryChange.sk_for(int(change["version"])):
                yield f"{item['PK']}: {change['SK']} records version {change['version']}"


@invariant("inventory items match their latest history entry")
def latest_change_matches_item(snapshot: TableSnapshot) -> Iterator[str]:
    for item in snapshot.of_entity("InventoryItem"):
        history = _history(snapshot, item)
        if not history:
            yield f"{item['PK']}: no history at all"
            continue
        latest = history[-1]
        if int(latest["version"]) != int(item["version"]):
            yield f"{item['PK']}: at version {item['version']} but latest change is {latest['version']}"
        elif _fields(latest.get("after")) != _fields(item):
            yield f"{item['PK']}: stored {_fields(item)} but latest change recorded {_fields(latest.get('after'))}"
