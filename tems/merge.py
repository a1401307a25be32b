"""Three-way merge of one person's edit with what others saved since they opened the form.

An edit form carries the values it was opened with (the *base*). When the save finds the record at a newer
version, comparing three sets of values tells who changed what:

  - a field only this editor changed takes their value;
  - a field only the others changed keeps the stored value (writing the editor's stale copy back would silently
    undo a colleague's edit: the lost update this module exists to prevent);
  - a field both changed, to different values, is a *clash*: the only thing a person must decide.

The merge itself is a pure function of plain values; ``save_with_merge`` is the loop both edit services run
around their one conditional write (refused because the record moved on: merge onto what is stored, write
against that version), and the pages show the result. The base travels in the form as a signed token
(``sign_base``/``load_base``) because events keep no version history to read it back from; inventory uses the
same token so both pages work alike (see docs/INVENTORY.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core import signing

from tems.errors import DomainError

BASE_SALT = "tems.merge.base"
# A round is lost only when another save committed in between (progress for someone), so N people saving at
# once need at most N rounds; past this many, others are saving faster than a person could follow anyway.
MERGE_ATTEMPTS = 10
# A stand-in for an unknown base: unequal to every value, so every field that differs is a clash to decide.
UNKNOWN = object()

T = TypeVar("T")


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


@dataclass(frozen=True)
class MergedSave(Generic[T]):
    """What ``save_with_merge`` wrote, and the merge it wrote when someone had saved in between."""

    saved: T
    merge: Merge | None = None
    refusal: DomainError | None = None  # the last refusal merged over (who saved in between, for the message)


def save_with_merge(*, save: Callable[[int, Mapping[str, Any]], T],
                    stored: Callable[[DomainError], tuple[Mapping[str, Any], int] | None],
                    expected_version: int, base: Mapping[str, Any] | None, mine: Mapping[str, Any],
                    fields: Iterable[str], busy: Callable[[], DomainError]) -> MergedSave[T]:
    """Save ``mine`` (edited from ``base`` at ``expected_version``), merged with every save that landed since.

    ``save(version, values)`` is the one write, conditioned on ``version``. ``stored(error)`` says whether a
    refusal means "the record moved on": it gives the stored values (in the canonical form of ``mine``) and
    their version, or None for any other refusal, which propagates. A clean merge is written against that
    version, so a save landing meanwhile is caught again, never overwritten. ``base`` None (a form from before
    merging, or a forged token) makes every differing field a clash.

    Raises the refusal, with ``extra`` ``merge`` (the Merge) and ``base`` added, when fields clash; ``busy()``
    after ``MERGE_ATTEMPTS`` rounds.
    """
    fields = tuple(fields)
    assumed = base if base is not None else dict.fromkeys(fields, UNKNOWN)
    version, merged, refusal = expected_version, None, None
    for _ in range(MERGE_ATTEMPTS):
        try:
            saved = save(version, merged.values if merged else mine)
        except DomainError as error:
            current = stored(error)
            if current is None:
                raise
            theirs, version = current
            merged = three_way_merge(base=assumed, theirs=theirs, mine=mine, fields=fields)
            if not merged.clean:
                error.extra.update(merge=merged, base=base)
                raise
            refusal = error
            continue
        return MergedSave(saved, merged, refusal)
    raise busy()


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


def conflict_panel(*, error: DomainError, title: str, theirs: Mapping[str, Any], mine: Mapping[str, Any],
                   labels: Mapping[str, str], show=str, changes: Iterable[Mapping[str, Any]] = (),
                   discard_url: str, target: str, form_id: str) -> dict[str, Any]:
    """The context of the shared conflict panel (templates/includes/conflict_panel.html) for an edit refused
    with a merge: ``error.extra`` holds the merge, the version opened and the base it was opened at; ``theirs``
    and ``mine`` are the stored and the sent values in the form ``labels`` and ``show`` expect."""
    merge, current = error.extra["merge"], error.extra["current"]
    return {"title": title, "detail": error.detail,
            "opened_version": error.extra["expected_version"], "current_version": current["version"],
            "rows": panel_rows(merge=merge, base=error.extra["base"], theirs=theirs, mine=mine, labels=labels,
                               show=show),
            "clashes": len(merge.clashes), "changes": list(changes), "discard_url": discard_url, "target": target,
            "form_id": form_id}
