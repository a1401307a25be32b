"""The metrics of the contract (docs/ARCHITECTURE.md, "Logs and metrics"), counted exactly, read back from the
EMF lines CloudWatch would extract them from. Conflicts and throttles come from the capacity model in front of
DynamoDB Local, as AWS would answer them."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from botocore.retries.standard import ExponentialBackoff
from django.http import HttpResponse
from django.test import RequestFactory

from registrations.seating.models import SeatShard
from tems import telemetry
from tems.clock import utcnow
from tems.middleware import RequestLogMiddleware
from tems.outbox import outbox_message, outbox_relay
from tems.transactions import LabelledTransaction, RetryPolicy
from tests.capacity import Models, app_through
from tests.registrations.checkins.helpers import confirmed_ticket, scan
from tests.registrations.helpers import make_event, new_key
from tests.telemetry import captured_lines, emf_metrics


@pytest.fixture
def lines():
    with captured_lines("tems.telemetry") as handler:
        yield handler


@pytest.fixture
def start_model(dynamodb_local_endpoint):
    models = Models(dynamodb_local_endpoint)
    yield models.start
    models.stop_all()


def register(client, event_id: str, key: str):
    return client.post(f"/api/events/{event_id}/registrations", HTTP_IDEMPOTENCY_KEY=key)


def register_on_the_page(client, event_id: str, key: str):
    return client.post(f"/events/{event_id}/register/", {"idempotency_key": key})


@pytest.mark.parametrize("post", [register, register_on_the_page], ids=["api", "page without javascript"])
def test_a_double_click_counts_one_registration_and_one_replay(ddb, student_client, lines, post):
    event = make_event(capacity=5)
    key = new_key()
    first, second = post(student_client, event.event_id, key), post(student_client, event.event_id, key)
    assert first.status_code == second.status_code and first.status_code in (201, 302)
    one, two = lines.named("request")
    assert emf_metrics([one]) == {"RegistrationCreated": 1}
    assert emf_metrics([two]) == {"RegistrationReplayed": 1}
    assert emf_metrics(lines.lines) == {"RegistrationCreated": 1, "RegistrationReplayed": 1}


def test_a_new_key_of_a_registered_student_counts_already_registered(ddb, student_client, lines):
    event = make_event(capacity=5)
    register(student_client, event.event_id, new_key())
    assert register(student_client, event.event_id, new_key()).status_code == 200
    assert emf_metrics(lines.named("request")[1:]) == {"RegistrationAlreadyRegistered": 1}


@pytest.mark.parametrize("status, expected", [
    (200, {}), (404, {}), (409, {"Answer409": 1}), (422, {"Answer422": 1}), (429, {"Answer429": 1}),
    (500, {"Answer5xx": 1}), (503, {"Answer503": 1, "Answer5xx": 1}), (504, {"Answer5xx": 1}),
])
def test_answers_are_counted_by_status(lines, status, expected):
    middleware = RequestLogMiddleware(lambda request: HttpResponse(status=status))
    middleware(RequestFactory().get("/anything"))
    [line] = lines.named("request")
    assert emf_metrics([line]) == expected and line["status"] == status


def hold_seat(event_id: str) -> None:
    """A transaction on the event's first seat shard, which the capacity model then holds."""
    transaction = LabelledTransaction()
    transaction.update("staged", SeatShard(*SeatShard.key_for(event_id, 0)), [SeatShard.taken.add(0)],
                       add_version_condition=False)
    transaction.commit()


def test_a_conflict_counts_the_conflict_by_label_and_one_retry(ddb, student_client, lines, start_model,
                                                                monkeypatch):
    event = make_event(capacity=5)
    model = start_model(hold_ms=60_000)  # held until the registration's pause lets it go
    # The pause before the retry ends the hold, so exactly one attempt meets it.
    monkeypatch.setattr(RetryPolicy, "delay", lambda self, retry: model.reset() or 0.0)
    with app_through(model, ddb):
        hold_seat(event.event_id)
        lines.lines.clear()
        assert register(student_client, event.event_id, new_key()).status_code == 201
    [line] = lines.named("request")
    assert line["cancellations"] == [{"seat": "TransactionConflict"}]
    assert emf_metrics(lines.lines) == {"RegistrationCreated": 1, "TransactionConflict": 1, "Retry": 1}
    assert emf_metrics(lines.lines, label="seat") == {"TransactionConflict": 1}
    assert (line["retries"], line["ddb_requests"]) == (1, 2)


def test_a_throttled_transaction_counts_its_throttles_by_label_and_one_retry(ddb, student_client, lines,
                                                                             start_model, monkeypatch):
    event = make_event(capacity=5)
    model = start_model(partition_wcu=1)  # one write unit a second per partition
    monkeypatch.setattr(RetryPolicy, "delay", lambda self, retry: model.reset() or 0.0)
    with app_through(model, ddb):
        # One write fills the seat shard's partition for this second: the registration's seat is throttled.
        SeatShard(*SeatShard.key_for(event.event_id, 0)).update(actions=[SeatShard.taken.add(0)])
        lines.lines.clear()
        assert register(student_client, event.event_id, new_key()).status_code == 201
    [line] = lines.named("request")
    assert line["cancellations"] == [{"seat": "ThrottlingError"}]
    assert emf_metrics(lines.lines) == {"RegistrationCreated": 1, "Throttle": 1, "Retry": 1}
    assert emf_metrics(lines.lines, label="seat") == {"Throttle": 1}


def test_a_throttled_single_request_counts_each_throttled_answer(ddb, start_model, lines, monkeypatch):
    event = make_event(capacity=5)
    model = start_model(partition_wcu=2)  # two write units a second: the third write waits for botocore's retry
    # botocore's backoff is random, and three retries may all fall inside the one-second window that refused the
    # write; half a second apart, the last of them comes after the window has refilled.
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.5)
    with app_through(model, ddb), telemetry.scope("request"):
        for _ in range(3):
            SeatShard(*SeatShard.key_for(event.event_id, 0)).update(actions=[SeatShard.taken.add(0)])
    throttled = model.report()["throttles"]
    assert throttled >= 1  # botocore's backoff is random: how many tries the window took is read from the model
    assert emf_metrics(lines.lines) == {"Throttle": throttled}
    assert emf_metrics(lines.lines, label="seat") == {}  # a single request's throttle names no item


def test_an_outbox_delay_is_the_oldest_due_message_age_and_deliveries_are_counted(ddb, lines):
    now = utcnow()
    for age in (90, 30):
        outbox_message(message_type="Probe", payload={}, now=now - timedelta(seconds=age)).save()
    outbox_message(message_type="Broken", payload={}, now=now - timedelta(seconds=10)).save()

    def broken(message):
        raise RuntimeError("the receiver is down")

    report = outbox_relay(handlers={"Probe": lambda message: None, "Broken": broken}, now=lambda: now)
    assert (report.delivered, report.failed) == (2, 1)
    [line] = lines.named("outbox_relay")
    assert emf_metrics([line]) == {"OutboxLagSeconds": 90.0, "OutboxDelivered": 2}
    [directive] = line["_aws"]["CloudWatchMetrics"]
    assert {"Name": "OutboxLagSeconds", "Unit": "Seconds"} in directive["Metrics"]
    # Nothing due: the lag is 0 (a data point, so an alarm on it sees the relay is alive), nothing delivered.
    outbox_relay(handlers={"Probe": lambda message: None}, now=lambda: now)
    assert emf_metrics([lines.named("outbox_relay")[1]]) == {"OutboxLagSeconds": 0.0}


def test_a_check_in_is_counted_once_and_its_replay_as_a_replay(ddb, lines):
    event = make_event(capacity=5)
    ticket = confirmed_ticket(event.event_id, f"ann-{uuid.uuid4().hex[:6]}")
    key = new_key()
    with telemetry.scope("request"):
        scan(event.event_id, ticket, key=key)
    with telemetry.scope("request"):
        scan(event.event_id, ticket, key=key)
    first, again = lines.named("request")
    assert emf_metrics([first]) == {"CheckIn": 1}
    assert emf_metrics([again]) == {"RegistrationReplayed": 1}


def test_a_line_without_metrics_has_no_emf_directive(lines):
    with telemetry.scope("request"):
        pass
    [line] = lines.named("request")
    assert "_aws" not in line and "metrics" not in line
