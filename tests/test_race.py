"""The race helper itself: calls overlap, results keep their order, and a crash fails the race."""

import threading

import pytest

from tests.race import race


def test_every_call_is_running_before_any_returns():
    started = threading.Event()
    inside = []
    lock = threading.Lock()

    def call(n: int) -> int:
        with lock:
            inside.append(n)
            if len(inside) == 4:
                started.set()
        # Without the barrier releasing all four together this would time out: each waits for the others.
        assert started.wait(timeout=10)
        return n * n

    assert race([lambda n=n: call(n) for n in range(4)]) == [0, 1, 4, 9]


def test_a_call_that_raises_fails_the_race():
    def boom() -> None:
        raise ValueError("crashed mid-race")

    with pytest.raises(AssertionError, match="1 of 3 racing calls raised") as caught:
        race([lambda: 1, boom, lambda: 3])
    assert isinstance(caught.value.__cause__, ValueError)


def test_a_wedged_call_fails_instead_of_hanging():
    release = threading.Event()
    with pytest.raises(AssertionError, match="still running"):
        race([lambda: release.wait(5), lambda: None], timeout=0.2)
    release.set()
