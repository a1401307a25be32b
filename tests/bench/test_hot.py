"""The hot-event harness (tests/bench/hot.py) at a tiny size: its crowd has the promised shape, and its
bookkeeping adds up (every request answered once, the table's counts agree with the answers)."""

import contextlib
from collections import Counter

import pytest

from registrations.seating import lanes, router
from registrations.seating.gate import GateBusy
from tems.dynamo import TableConfig, configure_models
from tems.transactions import LabelledTransaction, Reason, TransactionCancelled
from tests.bench.context import BenchContext
from tests.bench.hot import (
    Answer,
    DesignResult,
    Scenario,
    arrival_quarters,
    chart,
    crowd,
    page,
    run_all,
    section,
    summary,
    sustained,
    tallied,
    tally,
)
from tests.helpers import REGION

pytestmark = pytest.mark.dynamodb_local

TINY = Scenario(students=30, capacity=20, arrival_seconds=1.0, scale=2.0, crowd=1.0, threads=40)


def test_the_crowd_arrives_at_a_fixed_rate_with_its_second_taps():
    taps = crowd(TINY)
    firsts = [tap for tap in taps if tap.kind == "first"]
    assert [tap.student for tap in firsts] == list(range(30))
    assert [tap.at for tap in firsts] == pytest.approx([i / TINY.machine_rate for i in range(30)])
    first_of = {tap.student: tap for tap in firsts}
    doubles = [tap for tap in taps if tap.kind == "double tap"]
    retries = [tap for tap in taps if tap.kind == "retry"]
    assert (len(doubles), len(retries)) == (3, 2)  # 10 % and 5 % of 30, never the same student twice
    assert not {tap.student for tap in doubles} & {tap.student for tap in retries}
    assert all(tap.key != first_of[tap.student].key for tap in doubles)
    assert all(tap.key == first_of[tap.student].key for tap in retries)
    # 50-150 ms later in real time, stretched by the scale on the machine
    assert all(0.05 * TINY.scale <= tap.at - first_of[tap.student].at <= 0.15 * TINY.scale
               for tap in doubles + retries)
    assert [tap.at for tap in taps] == sorted(tap.at for tap in taps)


def test_a_tiny_run_adds_up(dynamodb_local_endpoint):
    try:
        results, invariants = run_all(BenchContext(dynamodb_local_endpoint, "unused", REGION), TINY,
                                      designs=["single counter"])
    finally:
        configure_models(TableConfig.from_settings())
    result, = results
    numbers = summary(result, TINY)
    assert numbers["requests"] == len(crowd(TINY)) == 35
    assert sum(numbers["outcomes"].values()) == 35
    assert not numbers["errors"], numbers["outcomes"]
    created_students = {answer.tap.student for answer in result.answers if answer.outcome == "created"}
    table = result.table
    assert table["duplicates"] == 0 and table["oversell"] == 0
    assert table["students_registered"] == len(created_students) == numbers["created"]
    assert table["confirmed"] + table["waitlisted"] == table["students_registered"] == table["claims"]
    assert table["confirmed"] == table["expected_confirmed"] == min(20, len(created_students))
    assert table["tickets_unique"] and table["entries_match"] and table["positions_exact"]
    # Every answer's time is split into its DynamoDB calls, its pauses and the machine's own, which add up.
    assert all(a.in_dynamo > 0 and a.paused >= 0 and a.in_dynamo + a.paused <= a.seconds + 1e-6
               for a in result.answers)
    assert set(numbers["time_split"]) <= {"confirmed", "waitlisted"} and numbers["time_split"]
    assert all(not problems for problems in invariants.values()), invariants
    assert result.model["scale"] == 2.0
    # The page shows every measured design side by side and says plainly which one is not in the build.
    page = section([result, result, DesignResult("sharded", missing="not in this build")], TINY, invariants, 1.0)
    assert "**sharded**: not in this build" in page
    assert "| | single counter | single counter |" in page
    assert "S = 2, K = 1" in page
    # The heading and the crowd say the arrival window the run used, and why it is not the 10 s.
    assert "## Hot event at a 10 ms hold: one 20-seat event, 30 students in 1 s" in page
    assert "the issue's 10 s would offer 3/s, fewer than the 2,000/s to sustain, so the same crowd comes in 1 s" in page
    assert chart([result], TINY).count("<polyline") == 1


def test_the_tally_sorts_transactions_by_kind_outcome_and_gate(monkeypatch):
    def labelled(*labels: str) -> LabelledTransaction:
        transaction = LabelledTransaction()
        transaction._labels.update(labels)
        return transaction

    def cancelled(**codes: str) -> TransactionCancelled:
        return TransactionCancelled({label: Reason(code, None, None) for label, code in codes.items()}, cause=None)

    fates = iter([
        cancelled(seat="TransactionConflict"),  # a seat attempt before the gate closed
        None,  # a seat taken
        cancelled(lane="ConditionalCheckFailed"),  # a lane join after it
        cancelled(lane="ThrottlingError"),
    ])

    def commit(self):
        fate = next(fates)
        if fate is not None:
            raise fate

    closes = iter([False, GateBusy(), True])

    def gate_close(*, gate):
        outcome = next(closes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(LabelledTransaction, "commit", commit)
    monkeypatch.setattr(router, "gate_close", gate_close)
    monkeypatch.setattr(router, "lane_copy", lambda *, gate, lane: lane == 1)
    counts = Counter()
    with tallied(counts):
        for transaction in (labelled("seat", "claim"), labelled("seat", "claim")):
            with contextlib.suppress(TransactionCancelled):
                transaction.commit()
        for _ in range(3):  # refused (the epoch moved), conflicted, landed: the gate is closed from then on
            with contextlib.suppress(GateBusy):
                router.gate_close(gate=None)
        for lane in (0, 1):  # lane 0 had it already; lane 1 copies it
            router.lane_copy(gate=None, lane=lane)
        for transaction in (labelled("lane", "claim"), labelled("lane", "claim")):
            with contextlib.suppress(TransactionCancelled):
                transaction.commit()
    assert LabelledTransaction.commit is commit and router.gate_close is gate_close
    assert counts == Counter({
        ("seat", "before", "conflicted"): 1, ("seat", "before", "on the seat's item"): 1,
        ("seat", "before", "committed"): 1,
        ("gate close", "before", "refused"): 1, ("gate close", "before", "conflicted"): 1,
        ("gate close", "before", "committed"): 1,
        ("lane copy", "after", "refused"): 1, ("lane copy", "after", "committed"): 1,
        ("lane join", "after", "refused"): 1, ("lane join", "after", "conflicted"): 1,
        ("lane join", "after", "on a shard (throttled)"): 1,
    })
    assert tally(counts, "gate close", "before") == "1 / 1 / 1"
    assert tally(counts, "lane join", "after") == "0 / 1 / 1 (a shard (throttled) 1)"


def test_the_tally_counts_block_claims_by_what_became_of_them(monkeypatch):
    outcomes = iter([lanes.Block(first=1, end=2, left=0, assumed_from=0, claimed=True),
                     lanes.Block(first=1, end=2, left=0, assumed_from=0, claimed=False),
                     lanes.QueueBusy()])

    def claim_block(**kwargs):
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(lanes, "claim_block", claim_block)
    counts = Counter()
    with tallied(counts):
        for _ in range(3):
            with contextlib.suppress(lanes.QueueBusy):
                lanes.claim_block(event_id="e", lane=None, size=1, now=None)
    assert lanes.claim_block is claim_block
    assert tally(counts, "block claim", "any") == "1 / 1 / 1"
    assert tally(counts, "seat", "after") == "-"


def test_sustained_is_the_lowest_whole_quarter_second_inside_the_arrival_window():
    # TINY: 30 students at 30/s real over 1 s real, S = 2: quarters of 0.5 machine seconds, 4 of them whole.
    def answered(*ends: float) -> DesignResult:
        tap = crowd(TINY)[0]
        return DesignResult("x", answers=[Answer(tap=tap, lag=0.0, started=end, seconds=0.0, outcome="created")
                                          for end in ends])

    # 8, 8, 4 and 8 answers in the four quarters, then a late tail outside the window: the third quarter counts.
    ends = [0.1] * 8 + [0.6] * 8 + [1.1] * 4 + [1.6] * 8 + [2.2] * 30
    assert sustained(answered(*ends), TINY) == 4 * 4
    # A quarter with no answer at all is a rate of 0, not skipped.
    assert sustained(answered(0.1, 0.6, 1.6), TINY) == 0
    # A crowd shorter than two whole quarters says nothing sustained.
    short = Scenario(students=10, capacity=5, arrival_seconds=0.2, scale=2.0, crowd=1.0, threads=4)
    assert short.machine_seconds < 1.0 and sustained(answered(0.1), short) is None
    # The page lists the whole quarters themselves, so nobody reads them off the chart.
    assert arrival_quarters(answered(*ends), TINY) == [32, 32, 16, 32]


def test_the_page_keeps_every_hold_and_lists_them_shortest_first():
    glance = {"sustained_per_s": 2100, "busy_share_requests": 0.0, "busy_share_students": 0.0, "p99_ms": 190,
              "scale": 480, "crowd": 1, "falling_behind": False}
    record = {"25": {"section": "## Hot event at a 25 ms hold\n", "designs": {"sharded": {**glance, "p99_ms": 400}}},
              "10": {"section": "## Hot event at a 10 ms hold\n", "designs": {"sharded": glance}}}
    text = page(record)
    assert text.index("| 10 ms | sharded | 2,100 |") < text.index("| 25 ms | sharded | 2,100 |")
    assert text.index("## Hot event at a 10 ms hold") < text.index("## Hot event at a 25 ms hold")
    assert "| 400 |" in text
