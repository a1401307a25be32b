"""The article's race test, made harder, run on every technique (DynamoDB Local: moto is not linearizable).

50 threads register the same student for the same event at once, half with one shared Idempotency-Key (network
retries of one tap) and half with fresh keys (deliberate repeated taps). The real path must end with exactly one
registration; the naive read-then-write path must fail the very same check.
"""

import threading
import time
from collections import Counter

import pytest

from lab.techniques.registration import TECHNIQUES, naive
from registrations import selectors
from registrations.models import Registration
from registrations.seating.shards import event_seat_counts
from tems.invariants import check_all
from tests.helpers import assert_invariants_clean
from tests.race import WindowHeldOpen, race
from tests.registrations.helpers import make_event, new_key

THREADS = 50
STUDENT = "ann"


def same_student_race(technique, event_id, *, pause=None):
    shared_key = new_key()
    keys = [shared_key if n % 2 == 0 else new_key() for n in range(THREADS)]
    results = race([lambda key=key: technique(event_id=event_id, user_id=STUDENT, idempotency_key=key,
                                              **({"pause": pause} if pause else {})) for key in keys])
    return keys, shared_key, results


def assert_exactly_once(event_id, keys, shared_key, results):
    """The promise: one registration item pair, one claim, counter 1, one id in every answer."""
    user_side = list(Registration.query(Registration.user_pk_for(STUDENT),
                                        Registration.sk.startswith(Registration.SK_PREFIX)))
    event_side = list(selectors.event_registrations(event_id=event_id))
    assert len(user_side) == 1, f"{len(user_side)} registrations of one student"
    assert len(event_side) == 1
    claim = selectors.claim_get(event_id=event_id, user_id=STUDENT)
    assert claim is not None and claim.registration_id == user_side[0].registration_id
    assert event_seat_counts(event_id).registered == 1
    assert {result.registration_id for result in results} == {claim.registration_id}
    shared_bodies = {result.body for key, result in zip(keys, results, strict=True) if key == shared_key}
    assert len(shared_bodies) == 1 and None not in shared_bodies, "same key, different bytes"


def test_fifty_taps_of_one_student_register_exactly_once(ddb):
    event = make_event(capacity=10)
    keys, shared_key, results = same_student_race(TECHNIQUES["production"].run, event.event_id)
    assert_exactly_once(event.event_id, keys, shared_key, results)
    outcomes = Counter(result.outcome for result in results)
    assert outcomes["created"] == 1
    assert set(outcomes) <= {"created", "replayed", "already_registered"}
    assert_invariants_clean()


def test_a_wide_race_window_changes_nothing_on_the_real_path(ddb):
    # The real path has no read before its write, so stretching "the window" cannot open one.
    event = make_event(capacity=10)
    keys, shared_key, results = same_student_race(TECHNIQUES["production"].run, event.event_id,
                                                  pause=lambda: time.sleep(0.02))
    assert_exactly_once(event.event_id, keys, shared_key, results)
    assert_invariants_clean()


def test_the_same_race_catches_the_naive_handler(ddb):
    event = make_event(capacity=10)
    # The window between the reads and the writes held open until a second tap has read, as a slow network
    # would hold it, makes the bug certain.
    keys, shared_key, results = same_student_race(naive, event.event_id, pause=WindowHeldOpen())
    with pytest.raises(AssertionError, match="registrations of one student"):
        assert_exactly_once(event.event_id, keys, shared_key, results)
    created = {result.registration_id for result in results if result.outcome == "created"}
    assert len(created) > 1, "the naive handler should have registered the student more than once"
    problems = check_all()
    assert problems["every claim has both registration items and every registration its claim"]


@pytest.mark.parametrize("name", ["claim", "transaction"])
def test_the_article_techniques_prevent_duplicates_too(ddb, name):
    event = make_event(capacity=10)
    _, _, results = same_student_race(TECHNIQUES[name].run, event.event_id, pause=lambda: time.sleep(0.02))
    assert len({result.registration_id for result in results}) == 1
    user_side = list(Registration.query(Registration.user_pk_for(STUDENT),
                                        Registration.sk.startswith(Registration.SK_PREFIX)))
    assert len(user_side) == 1
    assert_invariants_clean()


def test_all_three_fails_in_flight_duplicates_instead_of_waiting(ddb):
    event = make_event(capacity=10)
    # Each tap that won its key's record holds its window until some tap has been answered "in progress": the
    # shared key's first tap is then certainly in flight while its duplicates arrive (a 50 ms window was not
    # enough on a loaded machine). A wrapper that made duplicates wait would never answer so, and the taps
    # would go on after the timeout, to fail the check below.
    answered_in_progress = threading.Event()

    def tap(**kwargs):
        attempt = TECHNIQUES["all_three"].run(**kwargs)
        if attempt.outcome == "in_progress":
            answered_in_progress.set()
        return attempt

    keys, shared_key, results = same_student_race(tap, event.event_id,
                                                  pause=lambda: answered_in_progress.wait(timeout=30))
    shared = [result for key, result in zip(keys, results, strict=True) if key == shared_key]
    # No duplicates, but taps of the same key that arrived while the first was running were refused.
    assert any(result.outcome == "in_progress" for result in shared)
    ids = {result.registration_id for result in results if result.registration_id}
    assert len(ids) == 1
    assert_invariants_clean()
