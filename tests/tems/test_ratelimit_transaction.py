"""The write limit carried in a registration's own transaction: the limit ON, as the app runs by default.

A registration counts itself (tems.ratelimit.add_write_count): first / replay / already registered stay 1 / 1 / 2
requests, a tap past the limit is the same 429 as the middleware's and writes nothing, and every other unsafe
route is still counted by the middleware's own UpdateItem.

One table for the module: every key is unique to its test (new events, new users, a new student key each test),
and each test leaves the table whole, so the invariants checked over all of it hold whatever ran before.
"""

import uuid
from datetime import datetime, timedelta

import pytest

from registrations import api, selectors
from registrations.seating.shards import event_seat_counts
from tems.clock import utcnow
from tems.identity import user_key
from tems.ratelimit import WINDOW_SECONDS, WriteRateCounter, WriteRateExceeded, forget_refusals
from tests.helpers import assert_invariants_clean, assert_problem
from tests.registrations.helpers import make_event, new_key, register
from tests.support.faults import CONFLICT, LOST, Fault, inject

LIMIT = 60


def five_seconds_into_this_minute() -> datetime:
    """A moment 5 s into a minute, so a test's taps all fall in one window whatever second the real clock shows;
    and in the real clock's minute, since the invariants checked after a test hold its outbox messages to the
    real clock (a fixed date turned them into undelivered messages a quarter of an hour after it)."""
    return utcnow().replace(second=5, microsecond=0)



def someone() -> str:
    return f"user-{uuid.uuid4().hex[:10]}"


@pytest.fixture(autouse=True)
def no_write_limit(settings):
    """Overrides the suite's: here the limit is on, at the app's default."""
    settings.TEMS_WRITE_RATE = LIMIT
    forget_refusals()
    yield
    forget_refusals()


def counted(user_id: str) -> int:
    """The user's count over every window (a test that straddles a minute still sees all of it)."""
    pk, _ = WriteRateCounter.key_for(user_id, 0)
    return sum(int(counter.n) for counter in WriteRateCounter.query(pk))


def api_register(client, event_id: str, key: str):
    return client.post(f"/api/events/{event_id}/registrations", HTTP_IDEMPOTENCY_KEY=key)


def page_register(client, event_id: str, key: str):
    return client.post(f"/events/{event_id}/register/", {"idempotency_key": key})


def test_api_first_replay_and_already_registered_are_1_1_2_requests(ddb, student, student_client, dynamodb_calls):
    event, other_event = make_event(), make_event()
    key = new_key()
    dynamodb_calls.clear()
    first = api_register(student_client, event.event_id, key)
    assert first.status_code == 201, first.content
    assert dynamodb_calls == ["TransactWriteItems"]

    dynamodb_calls.clear()
    replay = api_register(student_client, event.event_id, key)
    assert replay.content == first.content and replay["Idempotent-Replayed"] == "true"
    assert dynamodb_calls == ["TransactWriteItems"]

    dynamodb_calls.clear()
    again = api_register(student_client, event.event_id, new_key())
    assert again.status_code == 200
    # The refused round, then the answer stored under the new key with the count in the same transaction.
    assert dynamodb_calls == ["TransactWriteItems", "TransactWriteItems"]
    # Counted: the registration and the "already registered" answer; the replay's first tap was counted already.
    assert counted(user_key(student)) == 2
    assert api_register(student_client, other_event.event_id, new_key()).status_code == 201
    assert counted(user_key(student)) == 3
    assert_invariants_clean()


def test_the_page_sends_no_count_of_its_own(ddb, student, student_client, dynamodb_calls):
    event = make_event()
    dynamodb_calls.clear()
    assert page_register(student_client, event.event_id, new_key()).status_code == 302
    # One request decides and writes (the reads for the next page come after it).
    assert dynamodb_calls[0] == "TransactWriteItems" and dynamodb_calls.count("TransactWriteItems") == 1
    assert "UpdateItem" not in dynamodb_calls
    dynamodb_calls.clear()
    assert page_register(student_client, event.event_id, new_key()).status_code == 302  # already registered
    assert dynamodb_calls[:2] == ["TransactWriteItems", "TransactWriteItems"] and "UpdateItem" not in dynamodb_calls
    assert counted(user_key(student)) == 2


def test_a_view_counted_by_the_middleware_too_costs_a_request_and_counts_twice(ddb, student, student_client,
                                                                            dynamodb_calls, monkeypatch):
    """The broken variant: without the mark, the middleware sends its UpdateItem before the transaction."""
    monkeypatch.setattr(api.registration_create, "counts_own_writes", False)
    event = make_event()
    dynamodb_calls.clear()
    assert api_register(student_client, event.event_id, new_key()).status_code == 201
    assert dynamodb_calls == ["UpdateItem", "TransactWriteItems"]
    assert counted(user_key(student)) == 2


def test_other_unsafe_routes_are_counted_by_the_middleware(ddb, student, student_client, dynamodb_calls):
    response = student_client.delete(f"/api/registrations/none-{uuid.uuid4().hex[:8]}",
                                     HTTP_IDEMPOTENCY_KEY=new_key())
    assert response.status_code == 404
    assert dynamodb_calls[0] == "UpdateItem" and counted(user_key(student)) == 1


def fill_the_minute(user_id: str) -> None:
    """The user has used up this minute (and the next, should the test cross into it)."""
    window = int(utcnow().timestamp()) // WINDOW_SECONDS
    for w in (window, window + 1):
        WriteRateCounter(*WriteRateCounter.key_for(user_id, w), n=LIMIT,
                         expires_at=utcnow() + timedelta(minutes=5)).save()


def test_the_61st_tap_in_a_minute_is_429_and_writes_nothing(ddb, student, student_client, dynamodb_calls):
    event = make_event()
    fill_the_minute(user_key(student))
    dynamodb_calls.clear()
    refused = api_register(student_client, event.event_id, new_key())
    body = assert_problem(refused, 429)
    assert body["code"] == "rate_limited" and f"{LIMIT} a minute" in body["detail"]
    assert 1 <= int(refused["Retry-After"]) <= WINDOW_SECONDS and body["retry_after"] == int(refused["Retry-After"])
    assert dynamodb_calls == ["TransactWriteItems"]  # the refused transaction: no claim, no seat, no record
    assert selectors.claim_get(event_id=event.event_id, user_id=user_key(student)) is None
    assert event_seat_counts(event.event_id).registered == 0
    assert counted(user_key(student)) == 2 * LIMIT

    # This server now knows the minute is used up: the next taps are refused without asking the table.
    dynamodb_calls.clear()
    page = page_register(student_client, event.event_id, new_key())
    assert page.status_code == 429 and "Too many changes" in page.content.decode() and page["Retry-After"]
    assert dynamodb_calls == []
    assert_invariants_clean()


def test_a_page_tap_refused_by_its_transaction_gets_the_fragment(ddb, student, student_client, dynamodb_calls):
    event = make_event()
    fill_the_minute(user_key(student))
    dynamodb_calls.clear()
    fragment = student_client.post(f"/events/{event.event_id}/register/", {"idempotency_key": new_key()},
                                   HTTP_HX_REQUEST="true")
    assert dynamodb_calls == ["TransactWriteItems"]
    assert fragment.status_code == 429 and fragment["Retry-After"] and "<html" not in fragment.content.decode()
    assert 'role="alert"' in fragment.content.decode() and fragment["HX-Retarget"] == "#main"
    assert selectors.claim_get(event_id=event.event_id, user_id=user_key(student)) is None


def test_the_count_follows_the_minute_and_a_replay_is_never_refused(ddb):
    """The service on an injected clock, with a limit of 3: the first, the already-registered and the new
    registration are counted, a replay is not and is answered even past the limit; the fourth write of the minute
    is refused with nothing written, and the next minute takes it."""
    first_event, second_event, third_event = make_event(), make_event(), make_event()
    ann = someone()
    t0 = five_seconds_into_this_minute()
    key = new_key()
    first = register(first_event.event_id, ann, key, now=t0, write_limit=3)
    assert register(first_event.event_id, ann, now=t0, write_limit=3).kind == "already_registered"
    assert register(second_event.event_id, ann, now=t0, write_limit=3).kind == "created"
    assert counted(ann) == 3

    replay = register(first_event.event_id, ann, key, now=t0 + timedelta(seconds=1), write_limit=3)
    assert replay.kind == "replayed" and replay.response.body == first.response.body
    with pytest.raises(WriteRateExceeded) as refused:
        register(third_event.event_id, ann, now=t0 + timedelta(seconds=10), write_limit=3)
    assert refused.value.refusal.retry_after == 45
    with pytest.raises(WriteRateExceeded):  # "already registered" is an answer stored, so it is counted too
        register(first_event.event_id, ann, now=t0 + timedelta(seconds=10), write_limit=3)
    assert selectors.claim_get(event_id=third_event.event_id, user_id=ann) is None
    assert event_seat_counts(third_event.event_id).registered == 0
    assert counted(ann) == 3

    assert register(third_event.event_id, ann, now=t0 + timedelta(minutes=1), write_limit=3).kind == "created"
    assert counted(ann) == 4
    assert_invariants_clean()


@pytest.mark.parametrize("fault", [LOST, CONFLICT])
def test_a_round_sent_again_counts_once(ddb, fault):
    """A lost answer (the SDK repeats the transaction's token) and a conflict (the app sends the round again)."""
    event, bob = make_event(), someone()
    with inject(Fault(fault, operations={"TransactWriteItems"}, times=1)) as faults:
        outcome = register(event.event_id, bob, now=five_seconds_into_this_minute(), write_limit=LIMIT)
    assert faults.fired(fault) and outcome.kind == "created"
    assert counted(bob) == 1
    assert event_seat_counts(event.event_id).registered == 1
