"""``tems.item_size``: AWS's item size rule, on DynamoDB's JSON."""

from tems.item_size import item_size, value_size


def test_names_and_strings_count_their_utf8_bytes():
    assert item_size({"PK": {"S": "EVENT#1"}, "title": {"S": "Café"}}) == 2 + 7 + 5 + 5


def test_numbers_count_about_a_byte_per_two_significant_digits_plus_one():
    assert value_size({"N": "7"}) == 2
    assert value_size({"N": "1796178763"}) == 6
    assert value_size({"N": "1000"}) == 2  # trailing zeros are not significant
    assert value_size({"N": "-12"}) == 3


def test_booleans_nulls_lists_and_maps():
    assert value_size({"BOOL": True}) == value_size({"NULL": True}) == 1
    assert value_size({"L": [{"S": "ab"}, {"N": "1"}]}) == 3 + (1 + 2) + (1 + 2)
    assert value_size({"M": {"a": {"S": "xy"}}}) == 3 + 1 + 1 + 2
    assert value_size({"B": b"\x00\x01"}) == 2 and value_size({"SS": ["a", "bc"]}) == 3
