"""What must always hold for inventory items; ``manage.py check_invariants`` streams a table scan through these,
keeping per-item aggregates only (never an item's history)."""

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from inventory.models import TRACKED_FIELDS, InventoryChange
from tems.invariants import Item, Multiset, StreamingCheck, invariant


def _fields(values) -> dict:
    values = values or {}
    return {name: int(values[name]) if name == "quantity" and name in values else values.get(name)
            for name in TRACKED_FIELDS}


def _is_item(item: Item) -> bool:
    return item.get("entity") == "InventoryItem"


def _is_change(item: Item) -> bool:
    return item.get("entity") == "InventoryChange"


@dataclass
class _History:
    """What an item's history adds up to: how many changes, the newest one, and the chain of values."""

    version: int | None = None  # the item's own version, once its METADATA item has been seen
    fields: dict | None = None
    count: int = 0
    newest: int = 0
    newest_after: dict | None = None
    # Every change's (version, after) and every later change's (version - 1, before): a gap-free chain of
    # values has the same collection on both sides once the newest change's "after" is left out.
    afters: Multiset = field(default_factory=Multiset)
    befores: Multiset = field(default_factory=Multiset)


class _PerItem(StreamingCheck):
    def __init__(self) -> None:
        self.items: defaultdict[str, _History] = defaultdict(_History)
        self.found: list[str] = []

    def observe(self, item: Item) -> None:
        if _is_item(item):
            history = self.items[item["PK"]]
            history.version, history.fields = int(item["version"]), _fields(item)
        elif _is_change(item):
            history = self.items[item["PK"]]
            version = int(item["version"])
            history.count += 1
            if version > history.newest:
                history.newest, history.newest_after = version, _fields(item.get("after"))
            history.afters.add(version, tuple(sorted(_fields(item.get("after")).items())))
            if version > 1:
                history.befores.add(version - 1, tuple(sorted(_fields(item.get("before")).items())))
            if item["SK"] != InventoryChange.sk_for(version):
                self.found.append(f"{item['PK']}: {item['SK']} records version {item['version']}")

    def seen(self) -> Iterator[tuple[str, _History]]:
        for pk, history in sorted(self.items.items()):
            if history.version is not None:
                yield pk, history


@invariant("inventory quantities are never negative")
class QuantitiesNotNegative(StreamingCheck):
    def __init__(self) -> None:
        self.found: list[str] = []

    def observe(self, item: Item) -> None:
        if _is_item(item) and item.get("quantity", 0) < 0:
            self.found.append(f"{item['PK']}: quantity {item['quantity']}")
        elif _is_change(item) and item.get("after", {}).get("quantity", 0) < 0:
            self.found.append(f"{item['PK']} {item['SK']}: recorded quantity {item['after']['quantity']}")

    def problems(self) -> list[str]:
        return self.found


@invariant("inventory history versions are contiguous")
class HistoryContiguous(_PerItem):
    def problems(self) -> Iterator[str]:
        for pk, history in self.seen():
            # Keys are unique per version (checked in observe), so count == newest == version means 1..version.
            if not history.count == history.newest == history.version:
                yield (f"{pk}: version {history.version} but history holds {history.count} entries"
                       f" (newest {history.newest})")
            elif history.count:
                chain = Multiset(history.afters.count - 1, history.afters.digest)
                newest = Multiset()
                newest.add(history.newest, tuple(sorted(history.newest_after.items())))
                chain.digest = (chain.digest - newest.digest) % (1 << 64)
                if chain != history.befores:
                    yield f"{pk}: a change starts from values the change before it did not leave"
        yield from self.found


@invariant("inventory items match their latest history entry")
class LatestChangeMatchesItem(_PerItem):
    def problems(self) -> Iterator[str]:
        for pk, history in self.seen():
            if not history.count:
                yield f"{pk}: no history at all"
            elif history.newest != history.version:
                yield f"{pk}: at version {history.version} but latest change is {history.newest}"
            elif history.newest_after != history.fields:
                yield f"{pk}: stored {history.fields} but latest change recorded {history.newest_after}"
