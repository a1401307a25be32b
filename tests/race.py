"""The one race helper: start calls on their own threads at the same instant, so they really collide.

Races run on DynamoDB Local (moto is not linearizable). A barrier releases every thread together; results come
back in the order of the calls, and a call that raises fails the test, so a crash is never mistaken for a loss.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

# Generous: twenty threads on a loaded 2-core machine can take seconds to reach the barrier, but a wedged thread
# must fail the test rather than hang the run.
TIMEOUT = 300.0


def race(calls: Sequence[Callable[[], Any]], *, timeout: float = TIMEOUT) -> list[Any]:
    """Run each call on its own thread, all released at once; return their results in call order.

    Raises AssertionError (chained to the first error) if any call raised, a thread never reached the barrier,
    or a thread was still running after ``timeout`` seconds.
    """
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=timeout)
            results[index] = calls[index]()
        except BaseException as error:  # re-raised on the test thread below: a race must not crash anyone
            with lock:
                errors.append(error)

    threads = [threading.Thread(target=run, args=(n,), name=f"race-{n}") for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    stuck = [thread.name for thread in threads if thread.is_alive()]
    assert not stuck, f"still running after {timeout} s: {stuck}"
    if errors:
        raise AssertionError(f"{len(errors)} of {len(calls)} racing calls raised: {errors!r}") from errors[0]
    return results


class WindowHeldOpen:
    """A deliberately broken handler's race window (between the read that decides and the write that acts),
    held open until a second caller has entered it: the interleaving that breaks a read-then-write, made certain.

    A sleep made it only likely: on a loaded CI machine the threads reached the window far enough apart that
    every later one read the first one's write, the race was never run, and "the test can fail" failed. Nobody
    waits on a caller who read the first write and never enters; a lone caller gives up after ``timeout``.
    """

    def __init__(self, *, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.entered = 0
        self.changed = threading.Condition()

    def __call__(self) -> None:
        with self.changed:
            self.entered += 1
            self.changed.notify_all()
            assert self.changed.wait_for(lambda: self.entered >= 2, timeout=self.timeout), "no second caller"
