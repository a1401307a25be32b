"""One structured line per request: its id, who (by immutable key), what, how long, what DynamoDB did."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from tems import logs, telemetry
from tems.accounts import email_address_mark_verified
from tems.identity import user_key
from tems.log_filters import IdleRelayPassesLeftOut
from tems.outbox import OutboxMessage, outbox_message, outbox_relay
from tests.registrations.helpers import make_event
from tests.telemetry import captured_lines


def register(client, event_id: str, key: str, **headers):
    return client.post(f"/api/events/{event_id}/registrations", HTTP_IDEMPOTENCY_KEY=key, **headers)


@pytest.fixture
def lines():
    with captured_lines("tems.telemetry") as handler:
        yield handler


def test_a_request_line_carries_id_user_key_route_status_and_dynamodb_requests(ddb, student, student_client, lines):
    event = make_event(capacity=5)
    key = str(uuid.uuid4())
    first = register(student_client, event.event_id, key)
    again = register(student_client, event.event_id, key)
    assert (first.status_code, again.status_code) == (201, 201)
    one, two = lines.named("request")
    assert one["request_id"] == first["X-Request-ID"] and len(one["request_id"]) == 32
    assert two["request_id"] == again["X-Request-ID"] != one["request_id"]
    assert one["user"] == user_key(student)
    assert (one["method"], one["route"], one["path"], one["status"]) == (
        "POST", "api/events/<id:event_id>/registrations", f"/api/events/{event.event_id}/registrations", 201)
    assert one["duration_ms"] > 0 and one["level"] == "info" and one["timestamp"].endswith("Z")
    assert (one["idempotency_key"], one["replayed"], two["idempotency_key"], two["replayed"]) == (
        key, False, key, True)
    # The first registration is one transaction; its replay is one too (the record comes back as ALL_OLD).
    assert (one["ddb_requests"], two["ddb_requests"]) == (1, 1)
    assert (one["throttles"], one["retries"]) == (0, 0)
    assert two["cancellations"] == [{"idempotency": "ConditionalCheckFailed", "claim": "ConditionalCheckFailed"}]
    text = json.dumps(lines.lines)
    assert student.username not in text and student.email not in text


def test_a_well_formed_request_id_is_kept_and_anything_else_replaced(ddb, client, lines):
    kept = client.get("/accounts/login/", HTTP_X_REQUEST_ID="tap-2b1f.7:retry-1")
    replaced = client.get("/accounts/login/", HTTP_X_REQUEST_ID="two words\r\nX-Evil: 1")
    too_long = client.get("/accounts/login/", HTTP_X_REQUEST_ID="a" * 129)
    assert kept["X-Request-ID"] == "tap-2b1f.7:retry-1"
    assert len(replaced["X-Request-ID"]) == 32 and len(too_long["X-Request-ID"]) == 32
    assert [line["request_id"] for line in lines.named("request")] == [
        kept["X-Request-ID"], replaced["X-Request-ID"], too_long["X-Request-ID"]]
    # No user was read for the page, and none is read for its line.
    assert [line["user"] for line in lines.named("request")] == [None, None, None]


def test_any_log_line_written_for_a_request_carries_its_id():
    with captured_lines() as handler, telemetry.scope("request", request_id="tap-1"):
        logging.getLogger("registrations.services").warning("a seat was %s", "late")
    [line] = [line for line in handler.lines if line["event"] == "a seat was late"]
    assert (line["request_id"], line["level"], line["logger"]) == ("tap-1", "warning", "registrations.services")


def test_the_request_id_goes_with_the_outbox_message_into_the_mail(ddb, student, student_client, mailoutbox):
    email_address_mark_verified(user=student)
    event = make_event(capacity=5)
    answer = register(student_client, event.event_id, str(uuid.uuid4()), HTTP_X_REQUEST_ID="tap-from-browser")
    assert answer.status_code == 201
    [message] = [m for m in OutboxMessage.scan(OutboxMessage.entity == "OutboxMessage")
                 if m.message_type == "RegistrationCreated" and m.data["event_id"] == event.event_id]
    assert message.request_id == "tap-from-browser"
    with captured_lines() as handler:
        outbox_relay()
    [mail] = [mail for mail in mailoutbox if event.title in mail.subject]
    assert mail.extra_headers["X-Request-ID"] == "tap-from-browser"
    assert mail.extra_headers["Message-ID"].startswith(f"<outbox.{message.message_id}@")
    [relay_line] = handler.named("outbox_relay")
    assert relay_line["delivered"] >= 1


def test_a_message_handler_acts_for_the_request_that_wrote_the_message(ddb):
    seen = []

    def handler(message):
        seen.append((message.data["n"], telemetry.current_request_id()))

    with telemetry.scope("request", request_id="tap-a"):
        outbox_message(message_type="Probe", payload={"n": 1}).save()
    outbox_message(message_type="Probe", payload={"n": 2}).save()  # outside any request
    outbox_relay(handlers={"Probe": handler})
    assert sorted(seen) == [(1, "tap-a"), (2, None)]


def test_the_console_format_is_for_people_and_an_unknown_format_is_refused():
    record = logging.LogRecord("tems.telemetry", logging.INFO, __file__, 1, "plain words", None, None)
    rendered = logs.formatter(logs.CONSOLE).format(record)
    assert "plain words" in rendered and not rendered.lstrip().startswith("{")
    with pytest.raises(ValueError, match="TEMS_LOG_FORMAT"):
        logs.formatter("xml")


def test_a_terminal_leaves_out_idle_relay_passes_and_keeps_the_others():
    def record(line):
        return logging.LogRecord("tems.telemetry", logging.INFO, __file__, 1, line, None, None)

    quiet = IdleRelayPassesLeftOut()
    assert not quiet.filter(record({"event": "outbox_relay", "delivered": 0, "failed": 0, "skipped": 0}))
    assert quiet.filter(record({"event": "outbox_relay", "delivered": 1, "failed": 0, "skipped": 0}))
    assert quiet.filter(record({"event": "request", "status": 200}))
