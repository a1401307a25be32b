"""Three ways to add ``delta`` to an item's stock, side by side: one broken on purpose, two correct.

Same keyword-only signature, same return (the quantity written), so the tests, the benchmark and the lab can
run them interchangeably under the same contention:

- ``naive_add``: get, add, put. DELIBERATELY BROKEN, kept to show the lost update it causes: two writers read
  10, each writes its own result, one result silently wins. It also skips the history. It lives in the lab,
  which no production module imports.
- ``versioned_add``: the programmatic read-modify-write of ``services.item_modify`` (conditional on the
  version it read, retried with backoff and jitter). Right for any change computed from the old value.
- ``atomic_add``: ``services.item_adjust``, the relative ADD with a stock guard. Right for "sold 2".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from inventory.models import InventoryItem
from inventory.services import DEFAULT_POLICY, RetryPolicy, item_adjust, item_modify


def naive_add(*, sku: str, delta: int, actor: str, policy: RetryPolicy = DEFAULT_POLICY) -> int:
    """BROKEN ON PURPOSE: read, compute, overwrite with no condition. Loses concurrent updates."""
    item = InventoryItem.get(*InventoryItem.key_for(sku), consistent_read=True)
    item.quantity = int(item.quantity) + delta
    item.updated_by = actor
    # add_version_condition=False is the "last writer wins" that this function exists to demonstrate.
    item.save(add_version_condition=False)
    return int(item.quantity)


def versioned_add(*, sku: str, delta: int, actor: str, policy: RetryPolicy = DEFAULT_POLICY) -> int:
    """Read-modify-write conditioned on the version read; retried on a lost race, never overwrites."""
    item = item_modify(sku=sku, change=lambda stored: {"quantity": stored["quantity"] + delta}, actor=actor,
                       reason=f"add {delta}", policy=policy)
    return int(item.quantity)


def atomic_add(*, sku: str, delta: int, actor: str, policy: RetryPolicy = DEFAULT_POLICY) -> int:
    """A relative adjustment: applies whatever else lands first; refuses to take stock that is not there."""
    return item_adjust(sku=sku, delta=delta, reason=f"add {delta}", actor=actor, policy=policy).quantity


@dataclass(frozen=True)
class Technique:
    name: str
    label: str
    add: Callable[..., int]
    operation: str | None  # whose conflict and retry counters (``OperationMetrics``) the technique moves


TECHNIQUES: dict[str, Technique] = {t.name: t for t in (
    Technique("naive", "Naive get-then-put (broken)", naive_add, None),
    Technique("versioned", "Versioned write with retries", versioned_add, "modify"),
    Technique("atomic", "Atomic adjustment", atomic_add, "adjust"),
)}
