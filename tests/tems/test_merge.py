"""tems.merge: the three-way merge of an edit with what others saved meanwhile (pure, no database)."""

import pytest

from tems.errors import DomainError
from tems.merge import (
    MERGE_ATTEMPTS,
    Clash,
    load_base,
    panel_rows,
    save_with_merge,
    sign_base,
    three_way_merge,
)

FIELDS = ("name", "quantity", "location")
BASE = {"name": "T-shirt", "quantity": 10, "location": "Room A"}


def test_only_mine_changed_applies_mine():
    merge = three_way_merge(base=BASE, theirs=BASE, mine={**BASE, "quantity": 12}, fields=FIELDS)
    assert merge.clean and merge.values == {**BASE, "quantity": 12} and merge.mine_changed == ("quantity",)


def test_a_field_only_they_changed_keeps_their_value():
    # The lost edit of issue 11: I changed the quantity, a colleague renamed the item; the name must survive.
    theirs = {**BASE, "name": "Tee"}
    merge = three_way_merge(base=BASE, theirs=theirs, mine={**BASE, "quantity": 12}, fields=FIELDS)
    assert merge.clean and merge.values == {"name": "Tee", "quantity": 12, "location": "Room A"}
    assert merge.theirs_changed == ("name",) and merge.mine_changed == ("quantity",)


def test_both_changed_differently_is_the_only_clash():
    theirs = {**BASE, "name": "Tee", "location": "Cage 4"}
    mine = {**BASE, "name": "Shirt", "quantity": 3}
    merge = three_way_merge(base=BASE, theirs=theirs, mine=mine, fields=FIELDS)
    assert not merge.clean and merge.clashes == (Clash("name", "T-shirt", "Tee", "Shirt"),)
    # The proposal keeps their location and my quantity; the clash holds mine until the person decides.
    assert merge.values == {"name": "Shirt", "quantity": 3, "location": "Cage 4"}


def test_both_changed_to_the_same_value_is_agreement():
    merge = three_way_merge(base=BASE, theirs={**BASE, "name": "Tee"}, mine={**BASE, "name": "Tee"}, fields=FIELDS)
    assert merge.clean and merge.values["name"] == "Tee"


def test_a_field_missing_from_mine_is_unchanged_by_me():
    merge = three_way_merge(base=BASE, theirs={**BASE, "location": "B"}, mine={"quantity": 1}, fields=FIELDS)
    assert merge.clean and merge.values == {"name": "T-shirt", "quantity": 1, "location": "B"}


def test_signed_base_round_trips_and_is_scoped():
    token = sign_base(BASE, scope="item:A:v1")
    assert load_base(token, scope="item:A:v1", fields=FIELDS) == BASE
    assert load_base(token, scope="item:A:v2", fields=FIELDS) is None
    assert load_base(token + "x", scope="item:A:v1", fields=FIELDS) is None
    assert load_base("", scope="item:A:v1", fields=FIELDS) is None
    assert load_base(sign_base({"name": "x"}, scope="s"), scope="s", fields=FIELDS) is None


@pytest.mark.parametrize(("theirs", "mine", "state"), [
    ({**BASE, "name": "Tee"}, BASE, "theirs"),
    (BASE, {**BASE, "name": "Tee"}, "mine"),
    ({**BASE, "name": "Tee"}, {**BASE, "name": "Shirt"}, "clash"),
    (BASE, BASE, "same"),
])
def test_panel_rows_say_whose_value_wins(theirs, mine, state):
    merge = three_way_merge(base=BASE, theirs=theirs, mine=mine, fields=FIELDS)
    row = panel_rows(merge=merge, base=BASE, theirs=theirs, mine=mine, labels={"name": "Name"})[0]
    assert row.state == state and row.label == "Name"


class Store:
    """One record with a version, written only by a save conditioned on it (as the services' writes are)."""

    def __init__(self, values: dict, version: int = 1):
        self.values, self.version = dict(values), version
        self.writes: list[tuple[int, dict]] = []

    def save(self, version: int, values: dict) -> int:
        self.writes.append((version, dict(values)))
        if version != self.version:
            raise DomainError("conflict", "moved on", current={**self.values, "version": self.version})
        self.values, self.version = dict(values), self.version + 1
        return self.version

    def someone_saves(self, **changes) -> None:
        self.values, self.version = {**self.values, **changes}, self.version + 1

    @staticmethod
    def stored(error: DomainError):
        if error.code != "conflict":
            return None
        current = dict(error.extra["current"])
        return current, current.pop("version")


def saving(store: Store, *, base=BASE, mine, expected_version: int = 1):
    return save_with_merge(save=store.save, stored=store.stored, expected_version=expected_version, base=base,
                           mine=mine, fields=FIELDS, busy=lambda: DomainError("busy", "kept moving"))


def test_an_edit_of_the_current_version_is_saved_as_it_is():
    store = Store(BASE)
    outcome = saving(store, mine={**BASE, "quantity": 12})
    assert outcome.saved == 2 and outcome.merge is None and outcome.refusal is None
    assert store.writes == [(1, {**BASE, "quantity": 12})]


def test_a_save_landing_in_between_is_merged_and_written_against_its_version():
    store = Store(BASE)
    store.someone_saves(name="Tee")
    outcome = saving(store, mine={**BASE, "quantity": 12})
    assert store.values == {"name": "Tee", "quantity": 12, "location": "Room A"} and store.version == 3
    assert [version for version, _ in store.writes] == [1, 2]
    assert outcome.merge.theirs_changed == ("name",) and outcome.refusal.code == "conflict"


def test_a_clash_is_raised_with_the_merge_and_nothing_is_written():
    store = Store(BASE)
    store.someone_saves(name="Tee")
    with pytest.raises(DomainError) as refused:
        saving(store, mine={**BASE, "name": "Shirt"})
    assert refused.value.extra["merge"].clashing == {"name"} and refused.value.extra["base"] == BASE
    assert store.values["name"] == "Tee" and store.version == 2


def test_an_unknown_base_makes_every_difference_a_clash():
    store = Store(BASE)
    store.someone_saves(location="Cage 4")
    with pytest.raises(DomainError) as refused:
        saving(store, base=None, mine={**BASE, "quantity": 12})
    assert refused.value.extra["merge"].clashing == {"quantity", "location"}


def test_a_refusal_that_is_not_a_moved_version_propagates_unmerged():
    def save(version, values):
        raise DomainError("invalid", "bad quantity")

    with pytest.raises(DomainError) as refused:
        save_with_merge(save=save, stored=Store.stored, expected_version=1, base=BASE, mine=BASE, fields=FIELDS,
                        busy=pytest.fail)
    assert refused.value.code == "invalid" and "merge" not in refused.value.extra


def test_a_record_that_keeps_moving_ends_busy_after_the_bounded_rounds():
    store = Store(BASE)

    def save(version, values):
        store.someone_saves(location=f"Room {len(store.writes)}")
        return store.save(version, values)

    with pytest.raises(DomainError) as refused:
        save_with_merge(save=save, stored=store.stored, expected_version=1, base=BASE, mine={**BASE, "quantity": 2},
                        fields=FIELDS, busy=lambda: DomainError("busy", "kept moving"))
    assert refused.value.code == "busy" and len(store.writes) == MERGE_ATTEMPTS
