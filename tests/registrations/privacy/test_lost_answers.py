"""Every new write of the privacy features survives losing its answer, throttles and conflicts
(tests.support.faults): the erasure still frees each seat exactly once and leaves no trace, the retention job
still erases every answer, a retention saved once is saved once."""

from datetime import timedelta

import pytest

from registrations.privacy import services as privacy
from registrations.privacy.models import Erasure
from registrations.privacy.selectors import retention_get
from registrations.seating.shards import event_seat_counts
from tems.identity import user_key
from tests.helpers import assert_invariants_clean
from tests.registrations.helpers import STARTS, make_event
from tests.registrations.privacy.helpers import (
    ERASED_AT,
    full_event_with_waiting,
    past_event_with,
    person,
    register_person,
    seed_registration_answers,
    status_of,
    table_dump,
)
from tests.support.faults import CONFLICT, LOST, THROTTLE, WRITE_OPERATIONS, Fault, inject

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("faults", [
    [Fault(LOST, operations=WRITE_OPERATIONS)],
    [Fault(THROTTLE, operations=WRITE_OPERATIONS)],
    # The SDK does not retry a cancelled transaction: the app's own retries must absorb the conflicts.
    [Fault(CONFLICT, operations={"TransactWriteItems"}, times=4, final_attempt_too=True)],
], ids=["lost", "throttled", "conflicts"])
def test_an_erasure_under_faults_frees_each_seat_once_and_leaves_no_trace(ddb, faults):
    alice, bob, cat = (person(name, f"{name}@wonder.test") for name in ("alice.liddell", "bob", "cat"))
    event, _ = full_event_with_waiting(alice, bob, cat)
    past, _ = past_event_with(alice)
    key = user_key(alice)

    with inject(*faults, seed=11) as injected:
        report = privacy.personal_data_erase(user=alice, now=ERASED_AT)

    assert injected.fired(faults[0].kind)
    assert report.cancelled == 1
    assert (status_of(event.event_id, bob), status_of(event.event_id, cat)) == ("confirmed", "waitlisted")
    counters = event_seat_counts(event.event_id)
    assert (counters.registered, counters.waiting) == (1, 1)
    assert "alice.liddell" not in table_dump() and "alice.liddell@wonder.test" not in table_dump()
    assert Erasure.get(*Erasure.key_for(key)).done_at is not None
    assert_invariants_clean()


@pytest.mark.parametrize("kind", [LOST, THROTTLE])
def test_the_retention_job_under_faults_erases_every_answer(ddb, kind):
    event = make_event(capacity=3)
    for name in ("ann", "bob"):
        user = person(name, f"{name}@uni.test")
        seed_registration_answers(event.event_id, register_person(event.event_id, user).data, user, {"q": name})
    privacy.retention_set(event_id=event.event_id, days=1, expected_version=None, updated_by="staffer")

    # Not every write: botocore's retry quota (its token bucket) runs dry when every one of a run's dozens of
    # writes times out, and then the job fails for this run, as it would against a DynamoDB that drops them all.
    with inject(Fault(kind, operations=WRITE_OPERATIONS, probability=0.3), seed=5) as injected:
        finished = privacy.answers_retention_sweep(now=STARTS + timedelta(days=1))

    assert injected.fired(kind) and finished == 1
    assert "answers" not in table_dump()
    assert retention_get(event_id=event.event_id).done_at is not None


def test_a_retention_whose_answer_was_lost_is_saved_once(ddb):
    event = make_event()
    with inject(Fault(LOST, operations={"TransactWriteItems"}, times=1)) as injected:
        saved = privacy.retention_set(event_id=event.event_id, days=30, expected_version=None, updated_by="staffer")
    assert injected.fired(LOST)
    assert saved.version == 1 and retention_get(event_id=event.event_id).version == 1
