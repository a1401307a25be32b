"""What a join's own answer says of its place: an upper bound, named ``position_at_most``; reads say ``position``,
exact as of the read; answers stored before the label replay as they were stored."""

import json
from datetime import UTC, datetime

from lab.techniques.registration import registration_fingerprint
from registrations import notifications, selectors
from registrations.seating import shards
from registrations.seating.hints import hints
from tems.idempotency import StoredResponse, completed_record
from tems.outbox import OutboxMessage
from tests.registrations.helpers import make_event, new_key, register


def test_a_join_states_an_upper_bound_and_a_read_the_exact_place(ddb, settings):
    # Two lanes; the other lane's block of four leaves tickets 3-5 unissued, so the join at ticket 6 counts them
    # as people ahead: its answer says at most 6, the read says 3 (the case a burst makes thousands of).
    settings.SEATS_PER_SHARD, settings.WAITLIST_BLOCK_SECONDS = 1, 60
    event = make_event(capacity=2)
    hints.remember_shards(event.event_id, 2)
    lane_of = {f"u{n}": shards.home_shard(f"u{n}", 2) for n in range(200)}
    other = [user for user, lane in lane_of.items() if lane == 0]
    mine = next(user for user, lane in lane_of.items() if lane == 1)
    for user in other[:4]:
        register(event.event_id, user)  # two seats, then tickets 1 and 2 (of a block of four) in lane 0
    joined = register(event.event_id, mine)
    assert joined.response.status == 201 and joined.data["status"] == "waitlisted"
    assert "position" not in joined.data
    assert int(selectors.claim_get(event_id=event.event_id, user_id=mine).ticket) == 6
    assert joined.data["position_at_most"] == 6
    read = selectors.registration_view(registration=selectors.claim_get(event_id=event.event_id, user_id=mine))
    assert read["position"] == 3 <= joined.data["position_at_most"]
    again = register(event.event_id, mine)  # another tap: "already registered", answered from a read
    assert again.response.status == 200 and again.data["position"] == 3 and "position_at_most" not in again.data


def test_a_confirmed_answer_keeps_position_null(ddb):
    event = make_event(capacity=1)
    answer = register(event.event_id, "ann").data
    assert answer["status"] == "confirmed" and answer["position"] is None and "position_at_most" not in answer


def test_an_answer_stored_before_the_label_replays_byte_for_byte(ddb):
    """A record written by the code before ``position_at_most`` (its body says ``position``) is replayed as
    stored: a replay is the first answer, whatever the code answers now."""
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    key = new_key()
    old_body = ('{"registration_id":"01JOLDREG","event_id":"' + event.event_id + '","user":"bob",'
                '"status":"waitlisted","position":4,"ticket_url":"http://localhost:8000/tickets/old/",'
                '"qr_url":"/registrations/01JOLDREG/qr.svg","created_at":"2026-12-01T10:00:00+00:00"}')
    completed_record(user_id="bob", key=key, fingerprint=registration_fingerprint(event_id=event.event_id,
                                                                                  user_id="bob"),
                     response=StoredResponse(201, old_body)).save()
    replayed = register(event.event_id, "bob", key)
    assert replayed.kind == "replayed" and replayed.response.body == old_body
    http = replayed.response.to_http(replayed=True)
    assert http.content == old_body.encode() and http.status_code == 201
    assert selectors.claim_get(event_id=event.event_id, user_id="bob") is None  # nothing applied a second time


def test_the_waitlist_mail_says_at_most_for_new_and_old_messages(monkeypatch):
    sent = []
    monkeypatch.setattr(notifications, "_send", lambda message, subject, body, **kw: sent.append(
        body.format(title="Chess night", next="(the mode's rule)", **message.data)))
    base = {"registration_id": "r1", "event_id": "e1", "user": "u1", "status": "waitlisted"}
    for data in ({**base, "position_at_most": 7}, {**base, "position": 7}):  # now, and written before the label
        notifications.registration_created(OutboxMessage(
            message_id="m1", message_type="RegistrationCreated", payload=json.dumps(data),
            created_at=datetime(2026, 12, 1, tzinfo=UTC)))
    assert len(sent) == 2
    assert all("number 7 or nearer the front" in body and "exact place" in body for body in sent)
