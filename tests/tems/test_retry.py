"""The one retry primitive and the DynamoDB error helpers of tems.transactions (no engine needed)."""

import pytest
from pynamodb.exceptions import PutError, UpdateError

from tems.transactions import (
    Reason,
    RetryPolicy,
    TransactionCancelled,
    is_conditional_check_failed,
    response_code,
)


class Busy(Exception):
    pass


def cancelled(*codes):
    return TransactionCancelled({f"item-{n}": Reason(code, None, None) for n, code in enumerate(codes)}, cause=None)


def caps_policy(**kwargs):
    """A policy whose 'random' delay is its cap, recorded instead of slept."""
    slept = []
    return RetryPolicy(sleep=slept.append, uniform=lambda low, high: high, **kwargs), slept


def test_backoff_caps_grow_exponentially_then_stop_at_max_delay():
    policy, slept = caps_policy(base_delay=0.01, max_delay=0.05)
    for retry in range(5):
        policy.backoff(retry)
    assert slept == [0.01, 0.02, 0.04, 0.05, 0.05]


def test_full_jitter_draws_between_zero_and_the_cap():
    bounds = []
    policy = RetryPolicy(base_delay=0.01, max_delay=1.0, sleep=lambda s: None,
                         uniform=lambda low, high: bounds.append((low, high)) or low)
    policy.backoff(3)
    assert bounds == [(0, 0.08)]


def test_run_retries_conflicts_then_returns():
    policy, slept = caps_policy(attempts=4)
    results = iter([cancelled("TransactionConflict"), cancelled("None", "TransactionConflict"), "done"])

    def attempt():
        result = next(results)
        if isinstance(result, Exception):
            raise result
        return result

    assert policy.run(attempt, busy=lambda last: Busy()) == "done"
    assert slept == [0.01, 0.02]


def test_run_raises_the_busy_error_after_its_bound():
    policy, slept = caps_policy(attempts=3)
    calls = []

    def attempt():
        calls.append(1)
        raise cancelled("TransactionConflict")

    with pytest.raises(Busy) as raised:
        policy.run(attempt, busy=lambda last: Busy(last))
    # A pause between attempts, none after the last: it would only delay the busy answer.
    assert len(calls) == 3 and len(slept) == 2
    assert isinstance(raised.value.args[0], TransactionCancelled)


def test_run_lets_a_failed_condition_through_at_once():
    policy, slept = caps_policy()

    def attempt():
        raise cancelled("ConditionalCheckFailed")

    with pytest.raises(TransactionCancelled):
        policy.run(attempt, busy=lambda last: Busy())
    assert slept == []


def test_backoff_counter_pauses_up_to_its_bound_then_raises_busy():
    policy, slept = caps_policy(attempts=3, base_delay=0.02, max_delay=0.25)
    pauses = policy.pauses(busy=Busy)
    for _ in range(3):
        pauses.pause()
    with pytest.raises(Busy):
        pauses.pause()
    assert slept == [0.02, 0.04, 0.08]


def test_sleeping_swaps_only_the_sleep():
    policy = RetryPolicy(attempts=9)
    slept = []
    other = policy.sleeping(slept.append)
    assert (other.attempts, other.base_delay, other.max_delay) == (9, policy.base_delay, policy.max_delay)
    other.backoff(0)
    assert len(slept) == 1


@pytest.mark.parametrize(("codes", "only"), [
    (("TransactionConflict",), True),
    (("None", "TransactionConflict"), True),
    (("TransactionConflict", "ConditionalCheckFailed"), False),
    (("ConditionalCheckFailed",), False),
])
def test_only_conflicts_means_no_condition_failed(codes, only):
    assert cancelled(*codes).only_conflicts is only


def test_codes_count_each_reason_once():
    assert cancelled("ConditionalCheckFailed", "ConditionalCheckFailed", "None").codes == {
        "ConditionalCheckFailed", "None"}


def test_conditional_check_failed_is_read_from_the_error_code():
    class Cause(Exception):
        response = {"Error": {"Code": "ConditionalCheckFailedException", "Message": "The conditional request failed"}}

    refused = UpdateError("refused", cause=Cause())
    assert response_code(refused) == "ConditionalCheckFailedException"
    assert is_conditional_check_failed(refused)
    assert not is_conditional_check_failed(PutError("timed out"))  # a transport failure has no code
