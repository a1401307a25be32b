"""The door's outbox messages reach the configured consumers, and a repeated delivery changes nothing."""

from __future__ import annotations

import logging

from registrations.checkins import services
from tems.outbox import OutboxMessage, configured_handlers, outbox_relay
from tests.registrations.checkins.helpers import confirmed_ticket, scan
from tests.registrations.helpers import make_event


def test_check_in_and_undo_messages_are_delivered_by_the_relay(ddb, caplog):
    event = make_event(capacity=5)
    registration_id = scan(event.event_id, confirmed_ticket(event.event_id, "ann"), door="B").data["registration_id"]
    services.checkin_undo(event_id=event.event_id, registration_id=registration_id, undone_by="boss")
    handlers = configured_handlers()
    door_messages = [m for m in OutboxMessage.listed() if m.message_type.startswith("CheckIn")]
    assert sorted(m.message_type for m in door_messages) == ["CheckInRecorded", "CheckInUndone"]
    for message in door_messages:  # at-least-once: a second delivery of the same message is harmless
        handlers[message.message_type](message)
    with caplog.at_level(logging.INFO, logger="registrations.checkins.notifications"):
        report = outbox_relay(handlers={name: handlers[name] for name in ("CheckInRecorded", "CheckInUndone")})
    assert report.delivered == 2 and report.failed == 0
    assert any(f"registration {registration_id} of ann at door 'B'" in line for line in caplog.messages)
