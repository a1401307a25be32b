"""Create, versioned edit and programmatic read-modify-write of an item."""

from __future__ import annotations

from collections.abc import Callable

from inventory.errors import InventoryError
from inventory.models import InventoryChange, InventoryItem
from inventory.selectors import item_get
from inventory.services.item_versions import (
    CHANGE,
    DEFAULT_POLICY,
    ITEM,
    RetryPolicy,
    busy_error,
    change_entry,
    check_quantity,
    item_from_failure,
    not_found_error,
    stale_error,
    write_change,
)
from inventory.services.metrics import measured
from tems import audit
from tems.audit import Actor
from tems.audit.wording import ITEM_CREATED
from tems.clock import utcnow
from tems.transactions import LabelledTransaction, TransactionCancelled

# --- create -----------------------------------------------------------------------------------------------

def item_create(*, sku: str, name: str, description: str = "", quantity: int = 0, location: str = "",
                actor: str, team: str | None = None, audit_actor: Actor | None = None) -> InventoryItem:
    """Create an item, kept by ``team``, and its first history entry (version 1) in one transaction.

    Raises InventoryError('conflict') if the sku exists: the put is conditional, nothing is read first.
    """
    check_quantity(quantity)
    with measured("create") as stats:
        now = utcnow()
        item = InventoryItem(
            *InventoryItem.key_for(sku), sku=sku, name=name, description=description, quantity=quantity,
            location=location, created_at=now, created_by=actor, updated_at=now, updated_by=actor, gsi1sk=sku,
            team=team,
        )
        change = change_entry(sku=sku, version=1, kind=InventoryChange.CREATE, actor=actor, at=now, before=None,
                              after=item.snapshot())
        transaction = LabelledTransaction()
        # The version attribute adds attribute_not_exists(version); the key condition says what we mean.
        transaction.save(ITEM, item, condition=InventoryItem.pk.does_not_exist())
        transaction.save(CHANGE, change, condition=InventoryChange.sk.does_not_exist())
        audit.add_entry(transaction, actor=audit_actor, action=ITEM_CREATED, team=team, sku=sku,
                        after=item.snapshot(), now=now)
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            stats.count_cancellation(cancelled)
            if cancelled.failed(ITEM):
                raise InventoryError("conflict", f"An item with sku {sku!r} already exists.", sku=sku) from None
            raise
        item.version = 1
        return item


# --- versioned edit (a person's form or an API PUT with If-Match) -----------------------------------------

def item_update(*, sku: str, expected_version: int, name: str, description: str, quantity: int, location: str,
                actor: str, policy: RetryPolicy = DEFAULT_POLICY, audit_actor: Actor | None = None) -> InventoryItem:
    """Apply an edit only if the item is still at ``expected_version``: one conditional write with its history.

    Raises InventoryError: 'not_found'; 'precondition_failed' when someone changed the item since
    ``expected_version`` (``extra`` holds ``current``, the stored item, and ``changes``, what happened in
    between, newest first, so the person can compare and choose); 'invalid' for a negative quantity.
    Nothing is written in any of these cases.
    """
    check_quantity(quantity)
    wanted = {"name": name, "description": description, "quantity": quantity, "location": location}
    with measured("edit") as stats:
        for attempt in range(policy.attempts):
            # This read supplies the "before" of the history entry. It cannot let a stale edit through:
            # versions only grow, and the write below is conditioned on the version anyway.
            current = item_get(sku=sku)
            if int(current.version) != expected_version:
                raise stale_error(sku=sku, expected_version=expected_version, current=current)
            if current.snapshot() == wanted:
                return current  # saving an unchanged form is not a change: no version, no history
            try:
                return write_change(item=current, after=wanted, kind=InventoryChange.EDIT, actor=actor,
                                    audit_actor=audit_actor)
            except TransactionCancelled as cancelled:
                stats.count_cancellation(cancelled)
                if cancelled.failed(ITEM):
                    raise stale_error(sku=sku, expected_version=expected_version,
                                      current=item_from_failure(cancelled, sku)) from None
                if not cancelled.is_conflict:
                    raise
            # Another transaction held the item for a moment; our condition may well still hold.
            stats.backoff(policy, attempt)
        raise stats.gave_up(busy_error(sku, policy.attempts))


# --- programmatic read-modify-write -----------------------------------------------------------------------

def item_modify(*, sku: str, change: Callable[[dict], dict], actor: str, reason: str = "",
                kind: str = InventoryChange.EDIT, policy: RetryPolicy = DEFAULT_POLICY,
                operation: str = "modify", audit_actor: Actor | None = None) -> InventoryItem:
    """Compute new values from the stored ones and write them, retrying until no one else got in between.

    ``change(snapshot)`` gets the tracked fields as stored and returns the fields to change; it may be called
    more than once, so it must be pure. Each attempt: strongly consistent read, compute, one conditional
    transaction (version = the version read). On a lost race: backoff with full jitter, re-read, recompute.
    Returns the item as written (or as stored when the change alters nothing: no write, no history).

    Raises InventoryError: 'not_found'; 'invalid' (the change would make the item invalid); 'conflict' when
    ``policy.attempts`` attempts all lost their race. Never overwrites a change it did not see.
    """
    with measured(operation) as stats:
        for attempt in range(policy.attempts):
            current = item_get(sku=sku)
            before = current.snapshot()
            after = {**before, **change(dict(before))}
            check_quantity(after["quantity"])
            if after == before:
                return current
            try:
                return write_change(item=current, after=after, kind=kind, actor=actor, reason=reason,
                                    audit_actor=audit_actor)
            except TransactionCancelled as cancelled:
                stats.count_cancellation(cancelled)
                if cancelled.failed(ITEM) and cancelled.reasons[ITEM].raw_item is None:
                    raise not_found_error(sku) from None
                if not (cancelled.failed(ITEM) or cancelled.is_conflict):
                    raise
            stats.backoff(policy, attempt)
        raise stats.gave_up(InventoryError(
            "conflict",
            f"Gave up on {sku!r} after {policy.attempts} attempts: others kept changing it in between. "
            "Nothing was written; try again.",
            sku=sku, attempts=policy.attempts,
        ))
