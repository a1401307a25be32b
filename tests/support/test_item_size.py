"""``tests.support.item_size`` against AWS's item size rule, on DynamoDB's JSON.

The reference below is written straight from "DynamoDB item sizes and formats" (developer guide), on the text of
each value, without ``Decimal``, so the two agree only if both read the rule the same way.
"""

import base64
import math

from hypothesis import given
from hypothesis import strategies as st

from tests.support.item_size import item_size, value_size


# --- the documented rule, one line per sentence of the guide ---------------------------------------------------
def reference_number(text: str) -> int:
    # "Numbers are variable length, with up to 38 significant digits. Leading and trailing zeroes are trimmed. The
    # size of a number is approximately (1 byte per two significant digits) + (1 byte)." No word on the sign.
    mantissa = text.lstrip("+-").lower().split("e")[0]
    significant = mantissa.replace(".", "").strip("0")
    return math.ceil(len(significant) / 2) + 1


def reference_value(value: dict) -> int:
    (kind, data), = value.items()
    match kind:
        case "S":  # "number of UTF-8-encoded bytes"
            return len(data.encode("utf-8"))
        case "N":
            return reference_number(data)
        case "B":  # "the value's raw byte length", not its base64
            return len(base64.b64decode(data))
        case "BOOL" | "NULL":  # "(1 byte)"
            return 1
        case "SS" | "NS" | "BS":  # a set: its elements, each as a scalar of its type; the guide names no overhead
            return sum(reference_value({kind[0]: element}) for element in data)
        case "L":  # "3 bytes of overhead" + the elements, and "each List or Map element also requires 1 byte"
            return 3 + sum(reference_value(element) + 1 for element in data)
        case "M":  # the same, where an element of a map is its name and its value
            return 3 + sum(len(name.encode("utf-8")) + reference_value(element) + 1 for name, element in data.items())
    raise AssertionError(kind)


def reference_item(item: dict) -> int:
    # "The total size of an item is the sum of the lengths of its attribute names and values."
    return sum(len(name.encode("utf-8")) + reference_value(value) for name, value in item.items())


# --- values as DynamoDB's JSON carries them ---------------------------------------------------------------------
digits = st.text(alphabet="0123456789", min_size=1, max_size=20)
numbers = st.builds(
    lambda sign, zeros, whole, fraction, exponent: f"{sign}{zeros}{whole}{fraction}{exponent}",
    st.sampled_from(["", "-"]),
    st.sampled_from(["", "0", "000"]),  # leading zeros: trimmed
    digits,
    st.one_of(st.just(""), digits.map(lambda d: "." + d), st.just(".500")),  # trailing zeros: trimmed
    st.one_of(st.just(""), st.integers(-30, 30).map(lambda e: f"e{e}"), st.integers(0, 30).map(lambda e: f"E+{e}")),
)
names = st.text(min_size=1, max_size=8)
binaries = st.binary(max_size=40).map(lambda raw: base64.b64encode(raw).decode())
scalars = st.one_of(
    st.text(max_size=30).map(lambda text: {"S": text}),
    numbers.map(lambda number: {"N": number}),
    binaries.map(lambda raw: {"B": raw}),
    st.booleans().map(lambda flag: {"BOOL": flag}),
    st.just({"NULL": True}),
    st.lists(st.text(max_size=10), min_size=1, max_size=5, unique=True).map(lambda texts: {"SS": texts}),
    st.lists(numbers, min_size=1, max_size=5, unique=True).map(lambda numbers_: {"NS": numbers_}),
    st.lists(binaries, min_size=1, max_size=5, unique=True).map(lambda raws: {"BS": raws}),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda elements: {"L": elements}),
        st.dictionaries(names, inner, max_size=4).map(lambda elements: {"M": elements}),
    ),
    max_leaves=12,
)
items = st.dictionaries(names, values, min_size=1, max_size=6)


@given(items)
def test_an_item_is_the_size_the_documented_rule_gives(item):
    assert item_size(item) == reference_item(item)


@given(numbers)
def test_a_negative_number_is_as_large_as_its_magnitude(number):
    magnitude = number.lstrip("-")
    assert value_size({"N": "-" + magnitude}) == value_size({"N": magnitude}) == reference_number(magnitude)


@given(st.dictionaries(names, values, max_size=4), names)
def test_a_nested_map_costs_three_bytes_and_one_per_element_on_top_of_its_elements(elements, name):
    nested = {"M": {name: {"M": elements}}}
    inner = sum(len(key.encode()) + value_size(element) for key, element in elements.items())
    assert value_size(nested) == 3 + 1 + len(name.encode()) + (3 + len(elements) + inner)


def test_the_examples_of_the_guide_and_the_disagreement_that_was():
    assert value_size({"N": "-12345"}) == value_size({"N": "12345"}) == 3 + 1
    assert value_size({"N": "7"}) == 2 and value_size({"N": "1796178763"}) == 6
    assert value_size({"N": "1000"}) == value_size({"N": "0.001"}) == 2
    assert value_size({"N": "100.5"}) == 3  # zeros inside the digits count
    assert value_size({"NS": ["-1", "22", "333"]}) == 2 + 2 + 3
    assert value_size({"SS": ["a", "bc"]}) == 3 and value_size({"BS": ["AAE="]}) == 2
    assert item_size({"PK": {"S": "EVENT#1"}, "title": {"S": "Café"}}) == 2 + 7 + 5 + 5
    assert value_size({"L": [{"S": "ab"}, {"N": "1"}]}) == 3 + (1 + 2) + (1 + 2)
    assert value_size({"M": {"a": {"S": "xy"}}}) == 3 + 1 + 1 + 2
    assert value_size({"B": b"\x00\x01"}) == 2 and value_size({"BOOL": True}) == value_size({"NULL": True}) == 1
    assert item_size(None) == item_size({}) == 0
