"""The lab runs at most LAB_SLOTS races at once across every server, held in DynamoDB (issue 14, finding 11)."""

import json
import threading
from datetime import timedelta

import pytest

from lab import models as lab
from lab.models import LabSlot, lab_slot
from tems.errors import DomainError
from tests.helpers import assert_problem
from tests.race import race


def test_past_the_slots_a_run_is_busy_and_a_released_slot_is_free_again(ddb):
    with lab_slot(slots=1):
        with pytest.raises(DomainError) as caught, lab_slot(slots=1):
            pass
        assert caught.value.code == "busy" and caught.value.extra["retry_after"] == lab.BUSY_RETRY_AFTER_SECONDS
    with lab_slot(slots=1):
        pass
    assert list(LabSlot.query(LabSlot.PK)) == []  # released slots leave nothing behind


def test_a_dead_holders_slot_is_taken_over_after_its_lease(ddb):
    context = lab_slot(slots=1)
    context.__enter__()  # a run whose process dies: it never releases
    with pytest.raises(DomainError):
        with lab_slot(slots=1):
            pass  # the first lease (90 s) still runs
    stale = LabSlot.get(*LabSlot.key_for(0))
    stale.update(actions=[LabSlot.lease_expires_at.set(stale.lease_expires_at - timedelta(seconds=91))])
    with lab_slot(slots=1) as holder:
        assert LabSlot.get(*LabSlot.key_for(0), consistent_read=True).holder == holder


def test_concurrent_runs_never_hold_more_than_the_slots(ddb):
    """Eight runs at once for two slots: exactly two run, six are told the lab is busy."""
    runs = 8
    running, most, decided = [0], [0], [0]
    everyone_decided = threading.Condition()

    def run() -> str:
        try:
            with lab_slot(slots=2):
                with everyone_decided:
                    running[0] += 1
                    most[0] = max(most[0], running[0])
                    decided[0] += 1
                    everyone_decided.notify_all()
                    # Hold the slot until every run has had its answer, so each asked while the holders held.
                    everyone_decided.wait_for(lambda: decided[0] == runs, timeout=30)
                    running[0] -= 1
            return "ran"
        except DomainError:
            with everyone_decided:
                decided[0] += 1
                everyone_decided.notify_all()
            return "busy"

    outcomes = race([run] * runs)
    assert most[0] <= 2 and outcomes.count("ran") == 2 and outcomes.count("busy") == 6


@pytest.mark.django_db
def test_the_api_answers_503_with_retry_after_while_the_lab_is_full(ddb, staff_client, monkeypatch):
    monkeypatch.setattr(lab, "LAB_SLOTS", 1)
    with lab_slot():
        response = staff_client.post("/api/lab/lost-update", json.dumps(
            {"technique": "atomic", "writers": 2, "units_each": 1}), content_type="application/json")
    body = assert_problem(response, 503)
    assert response["Retry-After"] == str(lab.BUSY_RETRY_AFTER_SECONDS) and "busy" in body["detail"]
