"""``@idempotent`` on DynamoDB Local, with a fake clock and an injected sleep instead of real waiting."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.http import HttpResponse, JsonResponse
from django.test import RequestFactory

from tems.api import problem_from_error
from tems.errors import DomainError
from tems.idempotency import (
    IN_PROGRESS,
    RECORD_LABEL,
    RECORD_TTL,
    IdempotencyPolicy,
    IdempotencyRecord,
    StoredResponse,
    add_completed_record,
    idempotent,
    policy_url,
    replay_from_raw,
    request_fingerprint,
)
from tems.transactions import LabelledTransaction, TransactionCancelled

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def name_is_key(monkeypatch):
    """These tests are about the decorator, not identities: the unsaved users here are keyed by their name.

    tests/tems/test_identity.py covers the real immutable key end to end.
    """
    monkeypatch.setattr("tems.idempotency.edge.user_key", lambda user: user.get_username())


class FakeClock:
    def __init__(self, now: datetime = T0):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


def make_request(key: str | None, *, user: str = "ann", payload: dict | None = None, path: str = "/things/1"):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    request = RequestFactory().post(path, data=json.dumps(payload or {"n": 1}), content_type="application/json",
                                    **headers)
    request.user = User(username=user)
    return request


def counting_view(body: dict, status: int = 200):
    calls = []

    def view(request):
        calls.append(request)
        return JsonResponse({**body, "call": len(calls)}, status=status)

    return view, calls


def record(user: str, key: str) -> IdempotencyRecord:
    return IdempotencyRecord.get(*IdempotencyRecord.key_for(user, key), consistent_read=True)


def test_first_call_runs_and_stores_then_replays_byte_for_byte(ddb):
    view, calls = counting_view({"ok": True}, status=201)
    wrapped = idempotent(view, policy=IdempotencyPolicy(clock=FakeClock(), sleep=pytest.fail))
    key = str(uuid.uuid4())
    first = wrapped(make_request(key))
    again = wrapped(make_request(key))
    assert len(calls) == 1
    assert (first.status_code, again.status_code) == (201, 201) and again.content == first.content
    assert again["Idempotent-Replayed"] == "true" and not first.has_header("Idempotent-Replayed")
    stored = record("ann", key)
    assert stored.status == "COMPLETED" and stored.lease_expires_at is None


def test_key_reused_with_another_payload_is_422(ddb):
    view, calls = counting_view({"ok": True})
    wrapped = idempotent(view)
    key = str(uuid.uuid4())
    wrapped(make_request(key, payload={"n": 1}))
    with pytest.raises(DomainError) as caught:
        wrapped(make_request(key, payload={"n": 2}))
    assert caught.value.status == 422 and len(calls) == 1


@pytest.mark.parametrize("key", [None, "no pe"])
def test_key_is_required_and_well_formed(ddb, key):
    view, calls = counting_view({})
    with pytest.raises(DomainError) as caught:
        idempotent(view)(make_request(key))
    assert caught.value.status == 400 and calls == []


def test_keys_are_scoped_to_the_user(ddb):
    view, calls = counting_view({})
    wrapped = idempotent(view)
    key = str(uuid.uuid4())
    wrapped(make_request(key, user="ann"))
    response = wrapped(make_request(key, user="bob"))
    assert len(calls) == 2 and not response.has_header("Idempotent-Replayed")


def test_business_errors_are_stored_and_replayed(ddb):
    calls = []

    def view(request):
        calls.append(1)
        raise DomainError("not_found", "No such thing.")

    wrapped = idempotent(view)
    key = str(uuid.uuid4())
    first, again = wrapped(make_request(key)), wrapped(make_request(key))
    assert first.status_code == again.status_code == 404 and again.content == first.content
    assert len(calls) == 1 and again["Idempotent-Replayed"] == "true"


def test_transient_failures_are_not_stored_so_a_retry_can_succeed(ddb):
    outcomes = iter([RuntimeError("connection reset"), HttpResponse(status=503), HttpResponse("done", status=200)])

    def view(request):
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    wrapped = idempotent(view, rerun_after_crash=True)
    key = str(uuid.uuid4())
    with pytest.raises(RuntimeError):
        wrapped(make_request(key))
    with pytest.raises(IdempotencyRecord.DoesNotExist):
        record("ann", key)  # released, not stored
    assert wrapped(make_request(key)).status_code == 503
    assert wrapped(make_request(key)).content == b"done"
    assert wrapped(make_request(key))["Idempotent-Replayed"] == "true"


def test_redirect_is_replayed_with_its_location(ddb):
    wrapped = idempotent(lambda request: HttpResponse(status=303, headers={"Location": "/me/registrations/"}))
    key = str(uuid.uuid4())
    wrapped(make_request(key))
    again = wrapped(make_request(key))
    assert again.status_code == 303 and again["Location"] == "/me/registrations/"


def test_in_flight_duplicate_waits_and_replays_the_first_response(ddb):
    key = str(uuid.uuid4())
    release, entered = threading.Event(), threading.Event()
    calls = []

    def slow_view(request):
        calls.append(1)
        entered.set()
        assert release.wait(10)
        return JsonResponse({"first": True}, status=201)

    first_result = {}
    first = threading.Thread(target=lambda: first_result.update(
        response=idempotent(slow_view)(make_request(key))))
    first.start()
    assert entered.wait(10)

    sleeps = []

    def fake_sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 2:  # the first attempt finishes while the duplicate is backing off
            release.set()
            first.join(10)

    duplicate = idempotent(slow_view, policy=IdempotencyPolicy(sleep=fake_sleep))(make_request(key))
    assert len(calls) == 1
    assert duplicate.status_code == 201 and duplicate.content == first_result["response"].content
    assert duplicate["Idempotent-Replayed"] == "true"
    assert sleeps == [0.05, 0.1]  # exponential backoff, not a busy loop


def put_in_progress(key: str, *, lease_until: datetime, user: str = "ann", payload: dict | None = None) -> None:
    """The record an attempt leaves while running (or after its worker died)."""
    IdempotencyRecord(*IdempotencyRecord.key_for(user, key), user_id=user, key=key,
                      fingerprint=request_fingerprint(make_request(key, user=user, payload=payload)),
                      status=IN_PROGRESS, attempt_id="someone-else", lease_expires_at=lease_until,
                      created_at=T0, expires_at=T0 + RECORD_TTL).save()


def test_past_the_bounded_wait_it_is_409_with_retry_after(ddb):
    key = str(uuid.uuid4())
    clock = FakeClock()
    put_in_progress(key, lease_until=T0 + timedelta(seconds=15))
    sleeps = []
    policy = IdempotencyPolicy(clock=clock, sleep=sleeps.append, max_wait=1.0)
    view, calls = counting_view({})
    with pytest.raises(DomainError) as caught:
        idempotent(view, policy=policy)(make_request(key))
    assert caught.value.status == 409 and caught.value.extra["retry_after"] >= 1
    assert calls == [] and sleeps == [0.05, 0.1, 0.2, 0.4, 0.5]  # capped backoff, about max_wait in all
    response = problem_from_error(caught.value)  # what api_view answers
    assert response.status_code == 409 and response["Retry-After"] == str(caught.value.extra["retry_after"])
    assert json.loads(response.content)["type"] == policy_url()
    assert response["Link"] == f'<{policy_url()}>; rel="describedby"'
    assert record("ann", key).attempt_id == "someone-else"


def test_stale_in_progress_is_taken_over_after_its_lease(ddb):
    key = str(uuid.uuid4())
    put_in_progress(key, lease_until=T0 + timedelta(seconds=15))
    clock = FakeClock(T0 + timedelta(seconds=16))  # the holder's worker died a while ago
    view, calls = counting_view({"taken_over": True})
    response = idempotent(view, policy=IdempotencyPolicy(clock=clock, sleep=pytest.fail),
                          rerun_after_crash=True)(make_request(key))
    assert response.status_code == 200 and len(calls) == 1
    stored = record("ann", key)
    assert stored.status == "COMPLETED" and stored.attempt_id != "someone-else"


def test_stale_in_progress_of_another_request_is_still_422(ddb):
    key = str(uuid.uuid4())
    put_in_progress(key, lease_until=T0 + timedelta(seconds=15), payload={"other": True})
    clock = FakeClock(T0 + timedelta(seconds=16))
    with pytest.raises(DomainError) as caught:
        idempotent(counting_view({})[0], policy=IdempotencyPolicy(clock=clock))(make_request(key))
    assert caught.value.status == 422


def test_a_timed_out_attempt_does_not_overwrite_the_one_that_took_over(ddb):
    key = str(uuid.uuid4())
    clock = FakeClock()
    policy = IdempotencyPolicy(clock=clock, sleep=pytest.fail, lease=timedelta(seconds=15))
    inner = {}

    def slow_first(request):
        # While this attempt is still running its lease runs out and a retry takes over and completes.
        clock.advance(seconds=20)
        inner["response"] = idempotent(lambda r: HttpResponse("second"), policy=policy,
                                       rerun_after_crash=True)(make_request(key))
        return HttpResponse("first")

    first = idempotent(slow_first, policy=policy, rerun_after_crash=True)(make_request(key))
    assert first.content == b"first" and inner["response"].content == b"second"
    assert record("ann", key).response_body == "second"  # the late "first" did not overwrite it
    replay = idempotent(lambda r: pytest.fail("must not run"), policy=policy)(make_request(key))
    assert replay.content == b"second"


def test_after_a_crash_the_outcome_is_unknown_not_guessed_by_running_again(ddb):
    key = str(uuid.uuid4())
    put_in_progress(key, lease_until=T0 + timedelta(seconds=15))  # the worker died after its change, say
    clock = FakeClock(T0 + timedelta(seconds=16))
    view, calls = counting_view({"second run": True})
    with pytest.raises(DomainError) as caught:
        idempotent(view, policy=IdempotencyPolicy(clock=clock, sleep=pytest.fail))(make_request(key))
    assert caught.value.status == 409 and "unknown" in caught.value.detail
    assert calls == []  # a second run would see the first one's effect and answer something else


def test_an_exception_after_the_change_keeps_the_key_instead_of_releasing_it(ddb):
    def view(request):
        raise RuntimeError("crashed after its change, maybe")

    key = str(uuid.uuid4())
    with pytest.raises(RuntimeError):
        idempotent(view)(make_request(key))
    assert record("ann", key).status == IN_PROGRESS


def test_a_lost_answer_of_the_outcome_record_still_replays(ddb):
    from tests.support.faults import LOST, Fault, inject

    view, calls = counting_view({"ok": True})
    key = str(uuid.uuid4())
    with inject(Fault(LOST, operations={"TransactWriteItems"}, final_attempt_too=False)) as faults:
        first = idempotent(view)(make_request(key))
    assert faults.fired(LOST)
    again = idempotent(view)(make_request(key))
    assert again.content == first.content and again["Idempotent-Replayed"] == "true" and len(calls) == 1


def test_the_record_added_to_a_transaction_is_conditioned_and_returns_the_stored_one():
    transaction = LabelledTransaction()
    add_completed_record(transaction, user_id="ann", key="k1", fingerprint="fp", response=StoredResponse(201, "{}"),
                         now=T0)
    [item] = transaction.transact_items()
    put = item["Put"]
    assert transaction.sent_order == [RECORD_LABEL]
    assert put["Item"]["status"] == {"S": "COMPLETED"}
    assert put["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
    # Absent, or expired but not yet deleted by DynamoDB's lazy TTL sweep.
    assert put["ConditionExpression"] == "(attribute_not_exists (#0) OR #1 < :0)"
    assert put["ExpressionAttributeValues"] == {":0": {"N": str(int(T0.timestamp()))}}


def test_a_second_transaction_with_the_key_is_refused_under_its_label_and_replays_the_first(ddb):
    key = str(uuid.uuid4())

    def commit(body: str) -> None:
        transaction = LabelledTransaction()
        add_completed_record(transaction, user_id="ann", key=key, fingerprint="fp",
                             response=StoredResponse(201, body))
        transaction.commit()

    commit('{"first":true}')
    with pytest.raises(TransactionCancelled) as cancelled:
        commit('{"second":true}')
    assert cancelled.value.failed(RECORD_LABEL)
    replayed = replay_from_raw(cancelled.value.reasons[RECORD_LABEL].raw_item, fingerprint="fp")
    assert replayed == StoredResponse(201, '{"first":true}')
