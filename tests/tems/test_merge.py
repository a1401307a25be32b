"""tems.merge: the three-way merge of an edit with what others saved meanwhile (pure, no database)."""

import pytest

from tems.merge import Clash, load_base, panel_rows, sign_base, three_way_merge

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
