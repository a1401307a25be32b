"""Event and registration writes on DynamoDB Local: conditional creates, version-checked edits, registering,
cancelling and the waitlist (every path here is transactional)."""

from datetime import UTC, datetime, timedelta

import pytest

from lab.techniques.registration import registration_fingerprint
from registrations import selectors, serializers, services, write_rules
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.models import Registration
from registrations.seating.models import SeatShard, WaitlistQueue
from registrations.seating.shards import event_seat_counts, shards_get
from registrations.ticket_tokens import ticket_url
from registrations.write_rules import WAITLIST_ENTRY
from tems.idempotency import RECORD_TTL, IdempotencyRecord, StoredResponse, completed_record
from tems.metering import metered
from tems.outbox import OutboxMessage
from tems.transactions import Reason, TransactionCancelled
from tests.helpers import assert_invariants_clean
from tests.race import race
from tests.registrations.helpers import STARTS, make_event, new_key, register


def edit(event_id, version, **changes):
    fields = {"title": "Open day", "description": "", "location": "", "starts_at": STARTS, "capacity": 5}
    return event_services.event_update(
        event_id=event_id, expected_version=version, updated_by="editor", **{**fields, **changes}
    )


def test_create_with_taken_id_is_refused_by_condition(ddb):
    make_event(event_id="fixed")
    with pytest.raises(RegistrationError) as caught:
        make_event(event_id="fixed", title="Impostor")
    assert caught.value.code == "conflict"
    assert selectors.event_get(event_id="fixed").title == "Open day"


def test_edit_at_current_version_applies_and_bumps_version(ddb):
    event = make_event()
    edit(event.event_id, 1, title="Open day (moved)", capacity=8)
    stored = selectors.event_get(event_id=event.event_id)
    assert (stored.title, stored.capacity, stored.version, stored.updated_by) == ("Open day (moved)", 8, 2, "editor")


def test_stale_edit_is_refused_and_reports_the_stored_version(ddb):
    event = make_event()
    edit(event.event_id, 1, title="Theirs")
    with pytest.raises(RegistrationError) as caught:
        edit(event.event_id, 1, title="Mine")
    assert caught.value.code == "conflict"
    assert caught.value.extra["current"]["title"] == "Theirs"
    assert caught.value.extra["current"]["version"] == 2
    assert selectors.event_get(event_id=event.event_id).title == "Theirs"


def test_edit_never_touches_the_seat_counters(ddb):
    event = make_event()
    # A registration (issue 3) takes seats in a shard without a version bump; simulate three.
    SeatShard(*SeatShard.key_for(event.event_id, 0)).update(actions=[SeatShard.taken.add(3)])
    stored = selectors.event_get(event_id=event.event_id)
    edit(event.event_id, stored.version, title="Renamed")
    assert event_seat_counts(event.event_id).registered == 3


def test_capacity_cannot_drop_below_seats_taken(ddb):
    event = make_event()
    SeatShard(*SeatShard.key_for(event.event_id, 0)).update(actions=[SeatShard.taken.add(4)])
    version = selectors.event_get(event_id=event.event_id).version
    with pytest.raises(RegistrationError) as caught:
        edit(event.event_id, version, capacity=3)
    assert caught.value.code == "invalid" and "capacity" in caught.value.errors


def test_edit_of_missing_event_is_not_found(ddb):
    with pytest.raises(RegistrationError) as caught:
        edit("ghost", 1)
    assert caught.value.code == "not_found"


def test_concurrent_edits_from_the_same_version_let_exactly_one_win(ddb):
    event = make_event()

    def attempt(n):
        try:
            edit(event.event_id, 1, title=f"writer {n}")
            return n
        except RegistrationError as error:
            assert error.code == "conflict"
            return None

    winners = [n for n in race([lambda n=n: attempt(n) for n in range(8)]) if n is not None]
    assert len(winners) == 1
    stored = selectors.event_get(event_id=event.event_id)
    assert stored.title == f"writer {winners[0]}" and stored.version == 2


def test_listing_puts_upcoming_first_soonest_first(ddb):
    make_event(event_id="later", starts_at=datetime(2027, 6, 1, tzinfo=UTC))
    make_event(event_id="sooner", starts_at=datetime(2027, 5, 1, tzinfo=UTC))
    make_event(event_id="past", starts_at=datetime(2020, 1, 1, tzinfo=UTC))
    upcoming, past = selectors.event_list(now=datetime(2026, 1, 1, tzinfo=UTC))
    assert [e.event_id for e in upcoming] == ["sooner", "later"]
    assert [e.event_id for e in past] == ["past"]


# --- registrations (DynamoDB Local: every path below is transactional) ---------------------------------------

CCF = "ConditionalCheckFailed"


def stored_items(event_id, user_id):
    claim = selectors.claim_get(event_id=event_id, user_id=user_id)
    user_side = list(Registration.query(Registration.user_pk_for(user_id),
                                        Registration.sk.startswith(Registration.SK_PREFIX)))
    return claim, user_side


def test_first_registration_is_one_request_holding_everything(ddb, cancellations):
    event = make_event(capacity=3)
    key = new_key()
    with metered() as meter:
        outcome = register(event.event_id, "ann", key)
    assert dict(meter.requests) == {"TransactWriteItems": 1}
    assert cancellations == []
    assert outcome.kind == "created" and outcome.response.status == 201
    body = outcome.data
    assert body["status"] == "confirmed" and body["position"] is None and body["user"] == "ann"
    assert body["ticket_url"] == ticket_url(event_id=event.event_id, registration_id=body["registration_id"],
                                            user_id="ann")
    # The QR code is drawn on read (issue 13): the stored answer links it, it does not carry the drawing.
    assert "qr_svg" not in body and body["qr_url"] == serializers.registration_qr_url(
        registration_id=body["registration_id"])
    claim, user_side = stored_items(event.event_id, "ann")
    assert claim.registration_id == body["registration_id"] and claim.status == "confirmed"
    assert [r.registration_id for r in user_side] == [body["registration_id"]]
    # The idempotency record was written already COMPLETED, with the exact bytes that were answered.
    record = IdempotencyRecord.get(*IdempotencyRecord.key_for("ann", key))
    assert (record.status, record.response_status, record.response_body) == ("COMPLETED", 201, outcome.response.body)
    # TTL is stored in whole epoch seconds.
    assert timedelta(hours=24) - timedelta(seconds=1) < record.expires_at - record.created_at <= timedelta(hours=24)
    outbox = [item for item in OutboxMessage.scan() if item.message_type == "RegistrationCreated"]
    assert [m.data["registration_id"] for m in outbox] == [body["registration_id"]]
    assert event_seat_counts(event.event_id).registered == 1
    assert_invariants_clean()


def test_same_key_replays_the_stored_bytes_in_one_request(ddb, cancellations):
    event = make_event()
    key = new_key()
    first = register(event.event_id, "ann", key)
    with metered() as meter:
        again = register(event.event_id, "ann", key)
    assert meter.total_requests == 1
    assert cancellations[-1]["idempotency"] == CCF  # the record's condition decided, read from its label
    assert again.kind == "replayed" and again.replayed
    assert again.response == first.response
    assert_invariants_clean()


def test_another_key_while_registered_answers_the_existing_registration(ddb, cancellations):
    event = make_event()
    first = register(event.event_id, "ann")
    key = new_key()
    with metered() as meter:
        other = register(event.event_id, "ann", key)
    assert meter.total_requests <= 2
    assert set(cancellations[-1]) == {"claim"} and cancellations[-1]["claim"] == CCF
    assert other.kind == "already_registered" and other.response.status == 200
    assert other.data["registration_id"] == first.data["registration_id"]
    assert other.data == {**first.data}  # same registration, same QR code, same created_at
    # The outcome is stored under the second key too, and replayed from there.
    assert register(event.event_id, "ann", key).response == other.response
    assert_invariants_clean()


def test_full_event_puts_the_same_request_on_the_waitlist(ddb, cancellations):
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    with metered() as meter:
        waiting = register(event.event_id, "bob")
    # The failed seat condition; closing the waiting list's gate: a read of the gate, one of every shard, the
    # gate's write under the epoch read and its copy into the lane (two UpdateItems); the lane's first block: the
    # queue read first (at the end of a burst every lane's first joiners claim it at once), then claimed from it
    # (one UpdateItem); the waitlist transaction.
    assert meter.requests == {"TransactWriteItems": 2, "GetItem": 2, "BatchGetItem": 1, "UpdateItem": 3}
    assert cancellations[-1] == {"seat": CCF}
    assert waiting.response.status == 201
    assert (waiting.data["status"], waiting.data["position_at_most"]) == ("waitlisted", 1)
    with metered() as meter:
        assert register(event.event_id, "cat").data["position_at_most"] == 2
    # The gate is closed now, and this process saw it: a read of cat's lane (with cat's claim and key record)
    # instead of a seat attempt it would refuse; the lane's block (the lane is busy, bob's block under a second
    # old: the queue is read first, and nobody has claimed one, so one UpdateItem); the waitlist transaction.
    assert meter.requests == {"BatchGetItem": 1, "GetItem": 1, "UpdateItem": 1, "TransactWriteItems": 1}
    entries = selectors.waitlist_entries(event_id=event.event_id)
    assert [(e.user_id, e.ticket) for e in entries] == [("bob", 1), ("cat", 2)]
    stored = event_seat_counts(event.event_id)
    assert (stored.registered, stored.waiting) == (1, 2)
    # cat joined bob's lane within a second of him, so the lane claimed a block of four (tickets.BLOCK_GROWTH):
    # tickets 3 to 5 are left over.
    assert WaitlistQueue.get(*WaitlistQueue.key_for(event.event_id)).seq == 5
    assert_invariants_clean()


def test_a_process_that_saw_the_event_full_reads_the_lane_and_still_takes_a_freed_seat(ddb):
    event = make_event(capacity=1)
    ann = register(event.event_id, "ann").data
    bob = register(event.event_id, "bob").data  # closes the gate: this process now knows the event full
    services.registration_cancel(user_id="bob", registration_id=bob["registration_id"])
    services.registration_cancel(user_id="ann", registration_id=ann["registration_id"])  # reopens it
    with metered() as meter:
        assert register(event.event_id, "cat").data["status"] == "confirmed"
    # The lane's read (the hint was stale: it shows the gate open and the seat free), then the seat.
    assert meter.requests == {"BatchGetItem": 1, "TransactWriteItems": 1}
    with metered() as meter:
        register(event.event_id, "dan")
    # The hint is gone: a seat attempt first, as on any event, then the gate closed again (its read, the shards'
    # read, the close and the lane's copy), the lane's block (a busy lane: the queue read first) and the join.
    assert meter.requests == {"TransactWriteItems": 2, "GetItem": 2, "BatchGetItem": 1, "UpdateItem": 3}
    assert_invariants_clean()


def full_event_seen_full():
    """A one-seat event, ann confirmed and bob waiting: the gate closed in this process's sight."""
    event, key = make_event(capacity=1), new_key()
    register(event.event_id, "ann")
    return event, key, register(event.event_id, "bob", key)


def lane_items(event_id):
    count = int(SeatShard.get(*SeatShard.key_for(event_id, 0)).shards)
    return [shard.serialize() for shard in shards_get(event_id=event_id, count=count)]


def test_a_repeat_tap_on_a_full_event_is_answered_from_the_first_read_without_a_transaction(ddb, cancellations):
    """On an event its process saw full, a registration reads its lane first instead of a seat attempt; the
    student's claim and the key's record come in the same BatchGetItem. A retry of bob's tap is his first answer
    from that read alone, and a second tap with a new key his registration, stored under the new key: neither
    sends a join that would be refused after holding a lane and paying a registration's write units."""
    event, bob_key, bob = full_event_seen_full()
    lanes_before, tried = lane_items(event.event_id), len(cancellations)
    with metered() as meter:
        again = register(event.event_id, "bob", bob_key)
    assert meter.requests == {"BatchGetItem": 1}
    assert again.kind == "replayed" and again.response == bob.response
    key = new_key()
    with metered() as meter:
        other = register(event.event_id, "bob", key)
    # The read, the position read that every "already registered" answer of a waiting student makes, and the
    # answer remembered under the new key.
    assert meter.requests == {"BatchGetItem": 3, "TransactWriteItems": 1}
    assert other.kind == "already_registered" and other.response.status == 200
    assert other.data["registration_id"] == bob.data["registration_id"]
    assert register(event.event_id, "bob", key).response == other.response
    assert register(event.event_id, "ann").kind == "already_registered"  # ann's claim, read the same way
    assert len(cancellations) == tried  # no transaction was refused: none was sent to be
    assert lane_items(event.event_id) == lanes_before
    assert_invariants_clean()


def test_the_first_read_replays_only_a_live_record_of_the_same_request(ddb):
    """The read's record answers as a refused record would: a key used for another request is refused as such,
    and an expired record (DynamoDB deletes them lazily) blocks nothing, so the tap registers."""
    event, _, _ = full_event_seen_full()
    used = new_key()
    register(event.event_id, "cat", used)
    with pytest.raises(RegistrationError) as caught:
        services.registration_create(event_id=event.event_id, user_id="cat", idempotency_key=used,
                                     fingerprint="another request")
    assert caught.value.code == "unprocessable"
    old = new_key()
    fingerprint = registration_fingerprint(event_id=event.event_id, user_id="dan")
    completed_record(user_id="dan", key=old, fingerprint=fingerprint, now=datetime.now(UTC) - 2 * RECORD_TTL,
                     response=StoredResponse.json({"an": "answer long gone"}, status=201)).save()
    again = register(event.event_id, "dan", old)
    assert again.kind == "created" and again.data["status"] == "waitlisted"
    assert_invariants_clean()


def test_unknown_event_is_not_found_and_writes_nothing(ddb, cancellations):
    with pytest.raises(RegistrationError) as caught:
        register("ghost", "ann")
    assert caught.value.code == "not_found"
    assert cancellations == [{"seat": CCF}]  # no shard, no image: a read then explains it (no event)
    assert selectors.claim_get(event_id="ghost", user_id="ann") is None


def test_key_reused_for_another_event_is_unprocessable(ddb, cancellations):
    one, two = make_event(), make_event()
    key = new_key()
    register(one.event_id, "ann", key)
    with pytest.raises(RegistrationError) as caught:
        register(two.event_id, "ann", key)
    assert caught.value.status == 422
    assert cancellations[-1]["idempotency"] == CCF
    assert selectors.claim_get(event_id=two.event_id, user_id="ann") is None


def test_keys_are_scoped_to_the_user(ddb):
    event = make_event()
    key = new_key()
    ann = register(event.event_id, "ann", key)
    bob = register(event.event_id, "bob", key)
    assert bob.kind == "created" and bob.data["user"] == "bob"
    assert bob.data["registration_id"] != ann.data["registration_id"]
    assert_invariants_clean()


def conflict(label="event"):
    return TransactionCancelled({label: Reason("TransactionConflict", "busy item", None)}, cause=None)


def test_conflicts_are_retried_with_jitter_then_succeed(ddb, monkeypatch):
    from tems.transactions import LabelledTransaction

    event = make_event()
    original = LabelledTransaction.commit
    failures = iter([conflict(), conflict()])

    def flaky(self):
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return original(self)

    monkeypatch.setattr(LabelledTransaction, "commit", flaky)
    pauses = []
    outcome = register(event.event_id, "ann", sleep=pauses.append)
    assert outcome.kind == "created"
    assert len(pauses) == 2 and all(0 <= p <= write_rules.CONFLICT_MAX_DELAY for p in pauses)
    assert_invariants_clean()


def test_endless_conflicts_become_busy_not_a_crash(ddb, monkeypatch):
    from tems.transactions import LabelledTransaction

    event = make_event()
    monkeypatch.setattr(LabelledTransaction, "commit", lambda self: (_ for _ in ()).throw(conflict()))
    pauses = []
    with pytest.raises(RegistrationError) as caught:
        register(event.event_id, "ann", sleep=pauses.append)
    assert caught.value.code == "busy" and caught.value.status == 503
    assert caught.value.extra["retry_after"] >= 1
    assert len(pauses) == write_rules.MAX_CONFLICTS
    assert selectors.claim_get(event_id=event.event_id, user_id="ann") is None


def test_expired_idempotency_record_does_not_block_a_new_tap(ddb):
    event = make_event()
    key = new_key()
    old = register(event.event_id, "ann", key, now=datetime(2026, 1, 1, tzinfo=UTC))
    services.registration_cancel(user_id="ann", registration_id=old.data["registration_id"])
    fresh = register(event.event_id, "ann", key)  # a day later the key is free again
    assert fresh.kind == "created" and fresh.data["registration_id"] != old.data["registration_id"]


# --- capacity and the FIFO waitlist ---------------------------------------------------------------------------


def test_thirty_students_race_for_ten_seats(ddb):
    event = make_event(capacity=10)
    students = [f"student{n:02d}" for n in range(30)]
    outcomes = race([lambda s=s: register(event.event_id, s) for s in students])
    by_status = {}
    for student, outcome in zip(students, outcomes, strict=True):
        assert outcome.kind == "created" and outcome.response.status == 201
        by_status.setdefault(outcome.data["status"], []).append((student, outcome.data))
    assert len(by_status["confirmed"]) == 10 and len(by_status["waitlisted"]) == 20
    # Positions handed out are 1..20, each once, and agree with the ticket order of the stored queue (tickets are
    # unique and ordered, not dense: a lane's block can lapse with tickets unused, see registrations.seating.lanes).
    entries = selectors.waitlist_entries(event_id=event.event_id)
    tickets = [e.ticket for e in entries]
    assert len(tickets) == 20 and tickets == sorted(set(tickets))
    answered = {data["registration_id"]: data["position_at_most"] for _, data in by_status["waitlisted"]}
    assert [answered[e.registration_id] for e in entries] == list(range(1, 21))
    stored = event_seat_counts(event.event_id)
    assert (stored.registered, stored.waiting) == (10, 20)
    assert_invariants_clean()


def test_cancellations_promote_the_waitlist_in_order(ddb):
    event = make_event(capacity=2)
    confirmed = [register(event.event_id, u).data for u in ("ann", "bob")]
    waiting = [register(event.event_id, u).data for u in ("cat", "dan", "eve")]
    assert [w["position_at_most"] for w in waiting] == [1, 2, 3]

    with metered() as meter:
        result = services.registration_cancel(user_id="ann", registration_id=confirmed[0]["registration_id"])
    assert result == {"registration_id": confirmed[0]["registration_id"], "event_id": event.event_id,
                      "status": "cancelled"}
    # Read the registration, read the head, then ONE transaction cancels and promotes.
    assert meter.requests["TransactWriteItems"] == 1
    assert selectors.claim_get(event_id=event.event_id, user_id="ann") is None
    assert selectors.claim_get(event_id=event.event_id, user_id="cat").status == "confirmed"
    positions = {r["user"]: r["position"] for u in ("dan", "eve") for r in selectors.registration_list(user_id=u)}
    assert positions == {"dan": 1, "eve": 2}
    assert_invariants_clean()

    services.registration_cancel(user_id="bob", registration_id=confirmed[1]["registration_id"])
    assert selectors.claim_get(event_id=event.event_id, user_id="dan").status == "confirmed"
    assert selectors.registration_list(user_id="eve")[0]["position"] == 1
    promoted = [m.data["user"] for m in OutboxMessage.scan() if m.message_type == "RegistrationPromoted"]
    assert sorted(promoted) == ["cat", "dan"]
    stored = event_seat_counts(event.event_id)
    assert (stored.registered, stored.waiting) == (2, 1)
    assert_invariants_clean()


def test_cancelling_a_waitlisted_registration_moves_those_behind_up(ddb):
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    cat = register(event.event_id, "cat").data
    register(event.event_id, "dan")
    services.registration_cancel(user_id="cat", registration_id=cat["registration_id"])
    assert selectors.registration_list(user_id="dan")[0]["position"] == 1
    assert [e.user_id for e in selectors.waitlist_entries(event_id=event.event_id)] == ["dan"]
    assert_invariants_clean()


def test_last_seat_freed_with_nobody_waiting_is_a_free_seat(ddb):
    event = make_event(capacity=1)
    ann = register(event.event_id, "ann").data
    services.registration_cancel(user_id="ann", registration_id=ann["registration_id"])
    assert event_seat_counts(event.event_id).registered == 0
    assert register(event.event_id, "bob").data["status"] == "confirmed"
    assert_invariants_clean()


def test_a_cancelled_student_can_register_again(ddb):
    event = make_event()
    first = register(event.event_id, "ann").data
    services.registration_cancel(user_id="ann", registration_id=first["registration_id"])
    again = register(event.event_id, "ann")
    assert again.kind == "created" and again.data["registration_id"] != first["registration_id"]
    assert_invariants_clean()


def test_someone_elses_registration_cannot_be_cancelled(ddb):
    event = make_event()
    ann = register(event.event_id, "ann").data
    with pytest.raises(RegistrationError) as caught:
        services.registration_cancel(user_id="bob", registration_id=ann["registration_id"])
    assert caught.value.code == "not_found"
    assert selectors.claim_get(event_id=event.event_id, user_id="ann") is not None


def test_raising_capacity_promotes_from_the_waitlist_in_order(ddb):
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    for user in ("bob", "cat", "dan"):
        register(event.event_id, user)
    stored = selectors.event_get(event_id=event.event_id)
    edit(event.event_id, stored.version, capacity=3)
    assert [selectors.claim_get(event_id=event.event_id, user_id=u).status for u in ("bob", "cat", "dan")] == [
        "confirmed", "confirmed", "waitlisted"]
    assert selectors.registration_list(user_id="dan")[0]["position"] == 1
    stored = event_seat_counts(event.event_id)
    assert (stored.registered, stored.waiting, stored.capacity) == (3, 1, 3)
    assert_invariants_clean()


def test_cancels_and_registrations_racing_never_overbook(ddb):
    event = make_event(capacity=4)
    first = {u: register(event.event_id, u).data for u in ("u0", "u1", "u2", "u3", "u4", "u5")}
    cancels = [lambda u=u: services.registration_cancel(user_id=u, registration_id=first[u]["registration_id"])
               for u in ("u0", "u1", "u4")]
    joins = [lambda u=u: register(event.event_id, u) for u in ("n0", "n1", "n2", "n3", "n4")]
    race(cancels + joins)
    stored = event_seat_counts(event.event_id)
    assert stored.registered == 4 and stored.waiting == 4
    # u2, u3 kept their seats; u5 was first in the queue and got the first freed seat.
    assert selectors.claim_get(event_id=event.event_id, user_id="u5").status == "confirmed"
    assert_invariants_clean()


def test_losing_the_waitlist_ticket_retries_with_the_next_one(ddb, cancellations, monkeypatch):
    from tems.transactions import LabelledTransaction

    event = make_event(capacity=1)
    register(event.event_id, "ann")
    assert register(event.event_id, "dan").data["position_at_most"] == 1  # closes the gate; lane 0's block is [1]
    spied = LabelledTransaction.commit  # the cancellations spy
    started, sneaked = [], []

    def commit_with_a_joiner_in_between(self):
        # bob has claimed his lane's next block; right before his join lands, cat joins the same lane. cat's own
        # claim fails (the lane has a block pending), so cat installs bob's block and takes its first ticket.
        if WAITLIST_ENTRY in self.sent_order and not started:
            started.append(True)
            sneaked.append(register(event.event_id, "cat"))
        return spied(self)

    monkeypatch.setattr(LabelledTransaction, "commit", commit_with_a_joiner_in_between)
    cancellations.clear()
    bob = register(event.event_id, "bob")
    # bob and cat each read their lane first (this process saw the event full: no seat attempt). bob's join: his
    # lane moved under him and ticket 2's entry exists; the lane's ALL_OLD image shows the block installed with
    # ticket 3 left, so the retry takes it without a read or another claim.
    assert cancellations == [{"lane": CCF, "waitlist_entry": CCF}]
    assert sneaked[0].data["position_at_most"] == 2
    assert (bob.data["status"], bob.data["position_at_most"]) == ("waitlisted", 3)
    assert [(e.user_id, e.ticket) for e in selectors.waitlist_entries(event_id=event.event_id)] == [
        ("dan", 1), ("cat", 2), ("bob", 3)]
    assert WaitlistQueue.get(*WaitlistQueue.key_for(event.event_id)).seq == 5  # one block (of four) for both
    assert_invariants_clean()


def test_a_seat_freed_before_the_waitlist_join_lands_is_taken_instead(ddb, cancellations, monkeypatch):
    from tems.transactions import LabelledTransaction

    event = make_event(capacity=1)
    ann = register(event.event_id, "ann").data
    spied = LabelledTransaction.commit
    freed = []

    def commit_with_a_cancel_in_between(self):
        if len(cancellations) == 1 and not freed:
            freed.append(True)
            services.registration_cancel(user_id="ann", registration_id=ann["registration_id"])
        return spied(self)

    monkeypatch.setattr(LabelledTransaction, "commit", commit_with_a_cancel_in_between)
    bob = register(event.event_id, "bob")
    # No seat; the gate closed and copied into bob's lane, but ann's cancel (nobody waiting) reopened it on every
    # lane before his join landed: the lane's image shows her free seat.
    assert cancellations == [{"seat": CCF}, {"lane": CCF}]
    assert (bob.data["status"], bob.data["position"]) == ("confirmed", None)
    assert selectors.waitlist_entries(event_id=event.event_id) == []
    assert_invariants_clean()


def test_a_cancel_that_loses_to_another_tab_cancelling_the_same_seat_answers_done(ddb, monkeypatch):
    """The student's two tabs cancel the same registration at once. The one whose transaction finds it gone
    (its conditions fail, and the next read finds no registration) answers that it is cancelled, and its key
    replays that answer; the seat is freed once."""
    from registrations.services import cancel as cancel_service

    event = make_event(capacity=1)
    mine = register(event.event_id, "ann").data["registration_id"]
    commit = cancel_service.FreeingCommit.commit
    other_tab: list[dict] = []

    def the_other_tab_commits_first(self):
        if not other_tab:
            other_tab.append({})  # its own commit goes straight through
            other_tab[0] = services.registration_cancel(user_id="ann", registration_id=mine)
        return commit(self)

    monkeypatch.setattr(cancel_service.FreeingCommit, "commit", the_other_tab_commits_first)
    key = new_key()
    answer = services.registration_cancel_once(user_id="ann", registration_id=mine, idempotency_key=key,
                                               fingerprint="tap")
    assert other_tab[0]["status"] == "cancelled" and answer.response.status == 200 and not answer.replayed
    again = services.registration_cancel_once(user_id="ann", registration_id=mine, idempotency_key=key,
                                              fingerprint="tap")
    assert again.replayed and again.response.body == answer.response.body
    assert int(event_seat_counts(event.event_id).registered) == 0
    assert_invariants_clean()
