"""The offer-wave harness (tests/bench/offers.py) at a tiny size: its bookkeeping adds up, and its page says no
when the table shows a freed seat offered twice or to someone out of turn."""

import dataclasses

import pytest

from tems.dynamo import TableConfig, configure_models
from tests.bench.context import BenchContext
from tests.bench.offers import Wave, run_wave, schedule, section, summary
from tests.helpers import REGION

pytestmark = pytest.mark.dynamodb_local

TINY = Wave(capacity=12, waiting=8, cancels=5, seconds=1.0, scale=2.0, crowd=1.0, threads=10)


def test_the_cancellations_are_distinct_seated_students_at_a_fixed_rate():
    seated = {f"s{n}": f"r{n}" for n in range(12)}
    cancels = schedule(TINY, seated)
    assert len({cancel.user for cancel in cancels}) == 5 and {cancel.user for cancel in cancels} <= set(seated)
    assert [cancel.at for cancel in cancels] == pytest.approx([i * 2.0 / 5 for i in range(5)])


@pytest.fixture
def tiny_wave(dynamodb_local_endpoint):
    try:
        yield run_wave(BenchContext(dynamodb_local_endpoint, "unused", REGION), TINY)
    finally:
        configure_models(TableConfig.from_settings())


def test_a_tiny_wave_offers_each_freed_seat_once_to_the_head(tiny_wave):
    numbers = summary(tiny_wave)
    assert numbers["outcomes"] == {"cancelled": 5}
    assert numbers["offers"] == numbers["messages"] == numbers["cancelled"] == 5
    assert numbers["offer_items_per_student"] == numbers["messages_per_student"] == [1]
    assert numbers["offered_are_the_head"]
    assert (numbers["confirmed"], numbers["offered"], numbers["waiting"]) == (7, 5, 3)
    assert not any(tiny_wave.invariants.values()), tiny_wave.invariants
    assert tiny_wave.model["scale"] == 2.0
    page = section(tiny_wave)
    assert "| Every freed seat offered exactly once | yes |" in page
    assert "| Offered to the head of the line, in ticket order | yes |" in page
    assert "**NO**" not in page

    # The same table with the offers of a different head, and one student offered twice: the page says so.
    offers = [item for item in tiny_wave.items if item.get("entity") == "Offer"]
    twice = dataclasses.replace(tiny_wave, items=[*tiny_wave.items, offers[0]],
                                in_line=list(reversed(tiny_wave.in_line)))
    page = section(twice)
    assert "| Every freed seat offered exactly once | **NO** |" in page
    assert "| Offered to the head of the line, in ticket order | **NO** |" in page
