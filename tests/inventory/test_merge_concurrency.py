"""Editors of different fields racing from one opened version (DynamoDB Local): every edit survives the merge.

Each editor opened the item at v1 and changes one field of its own; they save at the same moment through
``inventory.edits.item_edit``. Whatever order the conditional writes land in, each loser merges its one field onto
the winner's version, so the item ends with every editor's value. Run with BROKEN_APPLY_ON_TOP to see the test
catch the old "apply my values on top" resolution, which silently writes the stale fields back.
"""

from __future__ import annotations

import pytest

from inventory import edits, selectors, services
from inventory.models import TRACKED_FIELDS
from tems.merge import Merge
from tests.race import race

BASE = {"name": "T-shirt (M)", "description": "Navy, logo front", "quantity": 10, "location": "Store room A"}
MINE = {"name": "Tee medium", "description": "Navy, new logo", "quantity": 12, "location": "Cage 4"}


def apply_on_top(*, base, theirs, mine, fields) -> Merge:
    # The resolution issue 11 reported: the editor's whole form, written on top of the newer version.
    return Merge(dict(mine), tuple(fields), (), ())


@pytest.mark.parametrize("broken", [False, pytest.param(True, marks=pytest.mark.xfail(strict=True, reason=(
    "the broken variant must lose an edit: proves the race is real and the test can fail")))],
    ids=["merge", "broken-apply-on-top"])
def test_concurrent_editors_of_different_fields_all_keep_their_change(ddb, monkeypatch, broken):
    if broken:
        monkeypatch.setattr(edits, "three_way_merge", apply_on_top)
    services.item_create(sku="TSHIRT-M", actor="ana", **BASE)

    def edit(field: str) -> None:
        edits.item_edit(sku="TSHIRT-M", expected_version=1, base=BASE, mine={**BASE, field: MINE[field]},
                        actor=f"editor-{field}")

    race([lambda field=field: edit(field) for field in TRACKED_FIELDS])
    stored = selectors.item_get(sku="TSHIRT-M")
    assert stored.snapshot() == MINE
    # One history entry per editor, contiguous: every save was one conditional write.
    assert [int(change.version) for change in selectors.item_history(sku="TSHIRT-M")] == [5, 4, 3, 2, 1]
