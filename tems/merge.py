"""Three-way merge of one person's edit with what others saved since they opened the form.

An edit form carries the values it was opened with (the *base*). When the save finds the record at a newer
version, comparing three sets of values tells who changed what:

  - a field only this editor changed takes their value;
  - a field only the others changed keeps the stored value (writing the editor's stale copy back would silently
    undo a colleague's edit: the lost update this module exists to prevent);
  - a field both changed, to different values, is a *clash*: the only thing a person must decide.

Pure functions of plain values; the services do the one conditional write and the pages show the result. The
base travels in the form as a signed token (``sign_base``/``load_base``) because events keep no version history
to read it back from; inventory uses the same token so both pages work alike (see docs/INVENTORY.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core import signing

BASE_SALT = "tems.merge.base"


@dataclass(frozen=True)
class Clash:
    field: str
    base: Any
    theirs: Any
    mine: Any


@dataclass(frozen=True)
class Merge:
    """The outcome of merging ``mine`` into ``theirs`` over their common ``base``."""

    values: dict[str, Any]  # what to write: theirs, with every field only I changed set to mine
    mine_changed: tuple[str, ...]
    theirs_changed: tuple[str, ...]
    clashes: tuple[Clash, ...]

    @property
    def clean(self) -> bool:
        return not self.clashes

    @property
    def clashing(self) -> frozenset[str]:
        return frozenset(clash.field for clash in self.clashes)

    def changes_anything(self, theirs: Mapping[str, Any]) -> bool:
        return any(self.values[name] != theirs[name] for name in self.values)


def three_way_merge(*, base: Mapping[str, Any], theirs: Mapping[str, Any], mine: Mapping[str, Any],
                    fields: Iterable[str]) -> Merge:
    """Merge ``mine`` onto ``theirs``: fields are compared by equality, so pass values in one canonical form.

    A field missing from ``mine`` counts as unchanged by me (an API PATCH sends only what it changes).
    """
    values: dict[str, Any] = {}
    mine_changed: list[str] = []
    theirs_changed: list[str] = []
    clashes: list[Clash] = []
    for name in fields:
        i_changed = name in mine and mine[name] != base[name]
        they_changed = theirs[name] != base[name]
        if i_changed:
            mine_changed.append(name)
        if they_changed:
            theirs_changed.append(name)
        # Both arriving at the same value is agreement, not a clash.
        if i_changed and they_changed and mine[name] != theirs[name]:
            clashes.append(Clash(name, base[name], theirs[name], mine[name]))
        values[name] = mine[name] if i_changed else theirs[name]
    return Merge(values, tuple(mine_changed), tuple(theirs_changed), tuple(clashes))


def sign_base(values: Mapping[str, Any], *, scope: str) -> str:
    """The opened values as a token for a hidden form field; ``scope`` (e.g. ``item:TSHIRT-M``) pins it to one
    record so a token cannot be replayed onto another form."""
    return signing.dumps(dict(values), salt=f"{BASE_SALT}:{scope}", compress=True)


def load_base(token: str, *, scope: str, fields: Iterable[str]) -> dict[str, Any] | None:
    """The values ``sign_base`` signed, or None when the token is missing, forged or for another record."""
    try:
        values = signing.loads(token or "", salt=f"{BASE_SALT}:{scope}")
    except signing.BadSignature:
        return None
    if not isinstance(values, dict) or any(name not in values for name in fields):
        return None
    return values


@dataclass(frozen=True)
class PanelRow:
    """One field of the conflict panel (templates/includes/conflict_panel.html), values already readable."""

    label: str
    theirs: str
    mine: str
    base: str
    state: str  # "clash" (decide) | "theirs" (kept theirs) | "mine" (yours applied) | "same"

    @property
    def note(self) -> str:
        return {"clash": "Both changed: decide in the form",
                "theirs": "Their change is kept",
                "mine": "Your change is applied",
                "same": ""}[self.state]


def panel_rows(*, merge: Merge, base: Mapping[str, Any] | None, theirs: Mapping[str, Any],
               mine: Mapping[str, Any], labels: Mapping[str, str], show=str) -> list[PanelRow]:
    """The rows of the shared conflict panel, in ``labels`` order; ``show`` turns a value into text."""
    rows = []
    for name, label in labels.items():
        if name in merge.clashing:
            state = "clash"
        elif theirs[name] == mine[name]:
            state = "same"
        elif name in merge.mine_changed:
            state = "mine"
        elif name in merge.theirs_changed:
            state = "theirs"
        else:
            state = "same"
        rows.append(PanelRow(label, show(theirs[name]), show(mine[name]),
                             show(base[name]) if base is not None else "", state))
    return rows
