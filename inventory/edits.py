"""Edits that meet someone else's change: merged three ways (tems.merge), still one conditional write each.

``item_update`` refuses any edit of a version that is no longer current. These services turn that refusal into
the right answer: fields only this editor changed are applied on top of the stored version, fields only others
changed keep their stored value, and only a field both changed (a clash) goes back to the person. The write
that applies a merge is ``item_update`` conditioned on the version the merge was computed against, so a change
landing while merging is caught again, never overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory.errors import InventoryError
from inventory.models import TRACKED_FIELDS, InventoryChange, InventoryItem
from inventory.selectors import item_get
from inventory.services import item_update
from tems.audit import Actor
from tems.merge import Merge, save_with_merge


@dataclass(frozen=True)
class EditOutcome:
    item: InventoryItem
    merge: Merge | None = None  # set when others had saved in between and their changes were kept
    merged_with: str = ""  # who those others were, for the message


def item_edit(*, sku: str, expected_version: int, base: dict | None, mine: dict, actor: str,
              audit_actor: Actor | None = None) -> EditOutcome:
    """Save a person's edit, merging it with anything saved since ``expected_version`` (whose values were ``base``).

    ``base`` None (a form from before merging existed, or a forged token) makes every differing field a clash.
    Raises InventoryError: 'precondition_failed' when fields clash, with ``extra`` as ``item_update`` gives it
    plus ``merge`` (the Merge) and ``base``; 'not_found', 'invalid', 'busy' as ``item_update`` does.
    """
    def save(version: int, values: dict[str, Any]) -> InventoryItem:
        return item_update(sku=sku, expected_version=version, actor=actor, audit_actor=audit_actor, **values)

    def stored(error: InventoryError) -> tuple[dict[str, Any], int] | None:
        if error.code != "precondition_failed":
            return None
        current = error.extra["current"]
        return current, int(current["version"])

    def busy() -> InventoryError:
        return InventoryError("busy", f"{sku!r} kept changing while your edit was merged; nothing was saved. "
                                      "Try again.", retry_after=1)

    outcome = save_with_merge(save=save, stored=stored, expected_version=expected_version, base=base, mine=mine,
                              fields=TRACKED_FIELDS, busy=busy)
    return EditOutcome(outcome.saved, outcome.merge, _who(outcome.refusal) if outcome.refusal else "")


def item_patch(*, sku: str, if_match: int, changes: dict[str, Any], actor: str,
               audit_actor: Actor | None = None) -> EditOutcome:
    """API ``PATCH`` with ``If-Match``: apply ``changes`` (only the fields the client changed) to the item.

    When the item moved on since ``if_match``, the changes still apply if none of their fields was changed
    meanwhile; the base is the item as it was at ``if_match``, read from its history (every version has its
    ``after``). Raises InventoryError 'precondition_failed' (412) naming each clashing field, with the stored
    item; 'precondition_failed' also when ``if_match`` is not a version this item ever had.
    """
    current = item_get(sku=sku)
    if if_match == int(current.version):
        base = current.snapshot()
    else:
        base = _snapshot_at(sku=sku, version=if_match, current=current)
    mine = {**base, **changes}
    try:
        return item_edit(sku=sku, expected_version=if_match, base=base, mine=mine, actor=actor,
                         audit_actor=audit_actor)
    except InventoryError as error:
        merge = error.extra.pop("merge", None)
        error.extra.pop("base", None)
        if error.code != "precondition_failed" or merge is None:
            raise
        clashes = {clash.field: {"base": clash.base, "theirs": clash.theirs, "yours": clash.mine}
                   for clash in merge.clashes}
        raise InventoryError(
            "precondition_failed",
            f"{error.detail} Changed by both: {', '.join(clashes)}. GET the item and decide.",
            errors={name: ["Changed by someone else since your version."] for name in clashes},
            clashes=clashes, **error.extra,
        ) from None


def _snapshot_at(*, sku: str, version: int, current: InventoryItem) -> dict:
    # Read only to find what the client's version held; the write is still conditioned on the stored version.
    if not 1 <= version < int(current.version):
        raise InventoryError("precondition_failed",
                             f"{sku!r} never had version {version}; it is at {int(current.version)}.",
                             current={"version": int(current.version)})
    change = InventoryChange.get(*InventoryChange.key_for(sku, version), consistent_read=True)
    return change.after_values


def _who(error: InventoryError) -> str:
    names = [change["changed_by"] for change in reversed(error.extra.get("changes", []))]
    return ", ".join(dict.fromkeys(names)) or "someone"
