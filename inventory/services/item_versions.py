"""What every inventory write shares: item labels, the retry policy, and the one transaction that moves an
item to its next version together with its history entry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from inventory.errors import InventoryError
from inventory.item_answers import change_to_dict, item_to_dict
from inventory.models import InventoryChange, InventoryItem
from inventory.selectors import item_history
from tems import audit, transactions
from tems.audit.services import changed_fields
from tems.audit.wording import ITEM_ADJUSTED, ITEM_COUNTED, ITEM_CREATED, ITEM_EDITED
from tems.clock import utcnow
from tems.idempotency import RECORD_LABEL
from tems.transactions import LabelledTransaction, TransactionCancelled

# Labels of the items in a change's transaction; cancellation reasons come back keyed by these.
ITEM = "item"
CHANGE = "change"
IDEMPOTENCY = RECORD_LABEL  # the tap's record (tems.idempotency.add_completed_record)
METRICS = "metrics"
# Many writers of one item finish at once; their metrics transactions then conflict and retry with jitter.
METRICS_ATTEMPTS = 12

MAX_QUANTITY = 10_000_000


@dataclass(frozen=True)
class RetryPolicy(transactions.RetryPolicy):
    """``tems.transactions.RetryPolicy`` for many writers of one item.

    A low cap keeps colliding writers colliding again: a cap that grows to 1 s spreads them apart, so each gets
    through in far fewer attempts, and 30 attempts leave a wide margin over the unluckiest writer
    (docs/INVENTORY.md has the measurements). The first retries stay short (the cap doubles from 10 ms), so the
    common case of one collision costs a person almost nothing.
    """

    attempts: int = 30
    base_delay: float = 0.01
    max_delay: float = 1.0


DEFAULT_POLICY = RetryPolicy()

# The audit log's action for each kind of history entry.
AUDIT_ACTIONS = {InventoryChange.CREATE: ITEM_CREATED, InventoryChange.EDIT: ITEM_EDITED,
                 InventoryChange.ADJUST: ITEM_ADJUSTED, InventoryChange.IMPORT: ITEM_COUNTED}


# --- shared pieces ----------------------------------------------------------------------------------------

def write_change(*, item: InventoryItem, after: dict, kind: str, actor: str, reason: str = "",
                 delta: int | None = None, guard=None,
                 add_record: Callable[[LabelledTransaction], None] | None = None,
                 audit_actor: audit.Actor | None = None, idempotency_key: str | None = None) -> InventoryItem:
    """One transaction: the item moves from ``item.version`` to the next with ``after``, plus its history and,
    with ``audit_actor`` (the person, ``tems.audit.actor_of``), its audit entry.

    Raises TransactionCancelled (reasons by label) when the version moved, the guard failed, the history entry
    exists or the idempotency record exists; the item's failure carries its ALL_OLD image.
    """
    transaction = LabelledTransaction()
    now = add_change(transaction, item=item, after=after, kind=kind, actor=actor, reason=reason, delta=delta,
                     guard=guard)
    if add_record is not None:
        add_record(transaction)
    before, changed = changed_fields(item.snapshot(), after)
    audit.add_entry(transaction, actor=audit_actor, action=AUDIT_ACTIONS[kind], team=item.team, sku=item.sku,
                    before=before, after=changed, idempotency_key=idempotency_key, now=now)
    transaction.commit()
    return InventoryItem(
        *InventoryItem.key_for(item.sku), sku=item.sku, created_at=item.created_at, created_by=item.created_by,
        updated_at=now, updated_by=actor, version=int(item.version) + 1, gsi1sk=item.gsi1sk, **after,
    )


def add_change(transaction: LabelledTransaction, *, item: InventoryItem, after: dict, kind: str, actor: str,
               reason: str = "", delta: int | None = None, guard=None, labels: tuple[str, str] = (ITEM, CHANGE),
               ) -> datetime:
    """Add the item's move to its next version and its history entry to ``transaction``; returns their time."""
    item_label, change_label = labels
    expected = int(item.version)
    now = utcnow()
    before = item.snapshot()
    # PynamoDB adds "version = :expected" to the condition and "ADD version 1" to the actions: the version
    # check and the change are one write.
    target = InventoryItem(*InventoryItem.key_for(item.sku), version=expected)
    actions = [InventoryItem.updated_at.set(now), InventoryItem.updated_by.set(actor)]
    if delta is not None:
        actions.append(InventoryItem.quantity.add(delta))
    elif after["quantity"] != before["quantity"]:
        actions.append(InventoryItem.quantity.set(after["quantity"]))
    for name in ("name", "description", "location"):
        if after[name] != before[name]:
            actions.append(getattr(InventoryItem, name).set(after[name]))
    condition = InventoryItem.pk.exists()
    if guard is not None:
        condition &= guard
    transaction.update(item_label, target, actions=actions, condition=condition, return_old_on_failure=True)
    transaction.save(change_label, change_entry(sku=item.sku, version=expected + 1, kind=kind, actor=actor, at=now,
                                                before=before, after=after, reason=reason, delta=delta),
                     condition=InventoryChange.sk.does_not_exist())
    return now


def change_entry(*, sku: str, version: int, kind: str, actor: str, at: datetime, before: dict | None, after: dict,
                 reason: str = "", delta: int | None = None) -> InventoryChange:
    return InventoryChange(
        *InventoryChange.key_for(sku, version), sku=sku, version=version, kind=kind, changed_by=actor,
        changed_at=at, reason=reason, delta=delta, before=before, after=after,
    )


def item_from_failure(cancelled: TransactionCancelled, sku: str) -> InventoryItem:
    raw = cancelled.reasons[ITEM].raw_item
    if raw is None:
        # ALL_OLD of a missing item is empty: the item is not there (deleted or never created).
        raise not_found_error(sku)
    return InventoryItem.from_raw_data(raw)


def stale_error(*, sku: str, expected_version: int, current: InventoryItem) -> InventoryError:
    # Reads only to explain the refusal; the refusal itself came from the version.
    changes = item_history(sku=sku, after_version=expected_version)
    who = ", ".join(dict.fromkeys(change.changed_by for change in reversed(changes))) or "Someone"
    return InventoryError(
        "precondition_failed",
        f"{who} changed this item after you opened it (version {expected_version} → {int(current.version)}). "
        "Nothing of yours was saved.",
        current=item_to_dict(current), changes=[change_to_dict(change) for change in changes],
        expected_version=expected_version,
    )


def not_found_error(sku: str) -> InventoryError:
    return InventoryError("not_found", f"There is no inventory item with sku {sku!r}.")


def busy_error(sku: str, attempts: int) -> InventoryError:
    return InventoryError("busy", f"{sku!r} is being changed by many people at once; nothing was written after "
                                  f"{attempts} attempts. Try again.", retry_after=1)


def check_quantity(quantity: int) -> None:
    if not 0 <= quantity <= MAX_QUANTITY:
        raise InventoryError("invalid", f"Quantity must be between 0 and {MAX_QUANTITY}; got {quantity}.",
                             errors={"quantity": [f"Must be between 0 and {MAX_QUANTITY}."]})
