"""Atomic adjustments ("sold 2", "received 10"): concurrent calls all apply, a tap applies once."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial

from inventory.errors import InventoryError
from inventory.models import InventoryChange, InventoryItem
from inventory.selectors import item_get
from inventory.services.item_versions import (
    DEFAULT_POLICY,
    IDEMPOTENCY,
    ITEM,
    MAX_QUANTITY,
    RetryPolicy,
    busy_error,
    item_from_failure,
    write_change,
)
from inventory.services.metrics import measured
from tems.audit import Actor
from tems.idempotency import StoredResponse, add_completed_record, fingerprint, replay_from_raw
from tems.transactions import TransactionCancelled

# --- atomic adjustments -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Adjustment:
    quantity: int
    version: int
    response: StoredResponse  # what the first application answered; a replay answers exactly this
    replayed: bool = False


def adjustment_fingerprint(*, sku: str, actor: str, delta: int, reason: str) -> str:
    # The page and the API share one fingerprint, so one tap is one adjustment whichever way it arrives.
    # ``actor`` here is whoever scopes the key: the caller's immutable user key (see item_adjust).
    return fingerprint(method="POST", route=f"inventory/{sku}/adjustments", user_id=actor,
                       payload={"delta": delta, "reason": reason})


def item_adjust(*, sku: str, delta: int, reason: str, actor: str, idempotency_key: str | None = None,
                user_id: str | None = None, policy: RetryPolicy = DEFAULT_POLICY,
                audit_actor: Actor | None = None) -> Adjustment:
    """Add ``delta`` (negative for "sold", positive for "received") to the stock; concurrent calls all apply.

    One transaction per attempt: the item (ADD quantity, version = version read, and for a decrement
    quantity >= -delta), its history entry, and with ``idempotency_key`` the tap's COMPLETED record. A key seen
    before answers the first outcome again (``replayed``) and changes nothing. ``actor`` is the name history
    shows; ``user_id`` (``tems.identity.user_key``) scopes the key, so a later account that takes a deleted
    one's name never shares its records. Callers without an account (the lab's writers) fall back to ``actor``.

    Raises InventoryError: 'invalid' (delta 0, or past MAX_QUANTITY in stock); 'not_found'; 'conflict' when the
    stock cannot cover a decrement (``extra['on_hand']``); 'unprocessable' when the key was used for a different
    request; 'busy' when ``policy.attempts`` attempts all lost their race (nothing written; retrying with the key is
    safe). ``audit_actor`` (the person, ``tems.audit.actor_of``): the audit entry, in the same transaction.
    """
    if delta == 0:
        raise InventoryError("invalid", "An adjustment must change the stock: delta cannot be 0.",
                             errors={"delta": ["Must not be 0."]})
    if abs(delta) > MAX_QUANTITY:
        raise InventoryError("invalid", f"An adjustment is at most {MAX_QUANTITY} units.",
                             errors={"delta": [f"Must be between -{MAX_QUANTITY} and {MAX_QUANTITY}."]})
    needed = max(0, -delta)
    scope = user_id or actor
    request_fingerprint = adjustment_fingerprint(sku=sku, actor=scope, delta=delta, reason=reason)
    with measured("adjust") as stats:
        for attempt in range(policy.attempts):
            current = item_get(sku=sku)
            version = int(current.version) + 1
            quantity = int(current.quantity) + delta
            response = StoredResponse.json({"quantity": quantity, "version": version}, status=200)
            add_record = None
            if idempotency_key:
                add_record = partial(add_completed_record, user_id=scope, key=idempotency_key,
                                     fingerprint=request_fingerprint, response=response)
            # The stock bounds are part of the write's condition: a decrement cannot go below 0, an increment
            # cannot take the item past MAX_QUANTITY (past which the item could no longer be edited).
            guard = (InventoryItem.quantity >= needed if needed
                     else InventoryItem.quantity <= MAX_QUANTITY - delta)
            try:
                write_change(item=current, after={**current.snapshot(), "quantity": quantity},
                             kind=InventoryChange.ADJUST, actor=actor, reason=reason, delta=delta,
                             guard=guard, add_record=add_record, audit_actor=audit_actor,
                             idempotency_key=idempotency_key)
                return Adjustment(quantity, version, response)
            except TransactionCancelled as cancelled:
                stats.count_cancellation(cancelled)
                if cancelled.failed(IDEMPOTENCY):
                    # Already applied (or the key was reused for something else, which replay refuses with 422).
                    stored = replay_from_raw(cancelled.reasons[IDEMPOTENCY].raw_item,
                                             fingerprint=request_fingerprint)
                    if stored is None:
                        raise busy_error(sku, attempt + 1) from None
                    stats.replayed = True
                    data = json.loads(stored.body)
                    return Adjustment(int(data["quantity"]), int(data["version"]), stored, replayed=True)
                if cancelled.failed(ITEM):
                    stored_item = item_from_failure(cancelled, sku)
                    # The item as the failed write saw it: if it cannot cover the decrement, that is the answer,
                    # whatever the version did. Otherwise only the version moved: go round again.
                    if int(stored_item.quantity) < needed:
                        on_hand = int(stored_item.quantity)
                        raise InventoryError(
                            "conflict", f"Only {on_hand} in stock: cannot take {needed}.",
                            on_hand=on_hand, requested=needed, sku=sku,
                        ) from None
                    if delta > 0 and int(stored_item.quantity) + delta > MAX_QUANTITY:
                        room = MAX_QUANTITY - int(stored_item.quantity)
                        raise InventoryError(
                            "invalid", f"At most {MAX_QUANTITY} can be in stock: room for {room} more, not {delta}.",
                            errors={"delta": [f"At most {room} more fit."], "amount": [f"At most {room} more fit."]},
                        ) from None
                elif not cancelled.is_conflict:
                    raise
            stats.backoff(policy, attempt)
        raise stats.gave_up(busy_error(sku, policy.attempts))
