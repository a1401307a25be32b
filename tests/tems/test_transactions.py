"""LabelledTransaction reads cancellation reasons by label, despite PynamoDB reordering items (DynamoDB Local)."""

import uuid

import pytest

from tems.dynamo import transaction_connection
from tems.idempotency import (
    IdempotencyRecord,
    StoredResponse,
    completed_record,
    fingerprint,
    record_is_absent_or_expired,
    replay_from_raw,
)
from tems.metering import metered
from tems.transactions import LabelledTransaction, TransactionCancelled


def record(key, body='{"n": 1}', fp="fp-1"):
    return completed_record(user_id="u1", key=key, fingerprint=fp, response=StoredResponse(201, body))


def build(key_a, key_b, key_c):
    """Added in the order update, put, condition check: PynamoDB sends them check, put, update."""
    txn = LabelledTransaction()
    target = IdempotencyRecord(*IdempotencyRecord.key_for("u1", key_a))
    txn.update("update-a", target, actions=[IdempotencyRecord.response_body.set("changed")],
               condition=IdempotencyRecord.pk.exists(), return_old_on_failure=True)
    txn.save("put-b", record(key_b), condition=record_is_absent_or_expired(), return_old_on_failure=True)
    txn.condition_check("check-c", IdempotencyRecord, *IdempotencyRecord.key_for("u1", key_c),
                        condition=IdempotencyRecord.pk.exists())
    return txn


def test_sent_order_follows_pynamodb():
    assert build("a", "b", "c").sent_order == ["check-c", "put-b", "update-a"]


@pytest.mark.parametrize("failing", ["update-a", "put-b", "check-c"])
def test_each_failing_item_is_named(ddb, failing):
    keys = {label: str(uuid.uuid4()) for label in ("update-a", "put-b", "check-c")}
    # Make every condition pass except the one under test.
    for label in ("update-a", "check-c"):
        if label != failing:
            record(keys[label]).save()
    if failing == "put-b":
        record(keys["put-b"], body='{"first": true}').save()
    with pytest.raises(TransactionCancelled) as caught:
        build(keys["update-a"], keys["put-b"], keys["check-c"]).commit()
    assert list(caught.value.reasons) == [failing]
    assert caught.value.failed(failing)
    if failing == "put-b":
        # ALL_OLD on failure hands back the stored record: a replay needs no extra read.
        replay = replay_from_raw(caught.value.reasons["put-b"].raw_item, fingerprint="fp-1")
        assert replay == StoredResponse(201, '{"first": true}')


def test_commit_applies_everything(ddb):
    keys = [str(uuid.uuid4()) for _ in range(3)]
    record(keys[0]).save()
    record(keys[2]).save()
    build(*keys).commit()
    assert IdempotencyRecord.get(*IdempotencyRecord.key_for("u1", keys[0])).response_body == "changed"
    assert IdempotencyRecord.get(*IdempotencyRecord.key_for("u1", keys[1])).response_status == 201


def test_fingerprint_mismatch_is_422():
    from tems.errors import DomainError

    raw = record("k", fp=fingerprint(method="POST", route="/a", user_id="u1", payload={"x": 1}))
    with pytest.raises(DomainError) as caught:
        replay_from_raw(raw.serialize(), fingerprint=fingerprint(method="POST", route="/b", user_id="u1", payload={}))
    assert caught.value.status == 422



@pytest.fixture
def capacity_asked():
    """The ReturnConsumedCapacity of every TransactWriteItems botocore serialises during the test."""
    seen = []
    events = transaction_connection().client.meta.events
    # On the service's event, not the operation's: botocore runs a more specific event's handlers first, and this
    # one must see the parameters after tems.metering's handler (registered on the service's) had its say.
    name = "before-parameter-build.dynamodb"

    def note(params, event_name, **_):
        if event_name.endswith(".TransactWriteItems"):
            seen.append(params.get("ReturnConsumedCapacity"))

    events.register_last(name, note, unique_id="test-capacity-asked")
    yield seen
    events.unregister(name, unique_id="test-capacity-asked")


def test_a_transaction_asks_for_no_capacity_unless_metered(ddb, capacity_asked):
    txn = LabelledTransaction()
    txn.save("put", record(str(uuid.uuid4())))
    txn.commit()
    with metered() as meter:
        txn = LabelledTransaction()
        txn.save("put", record(str(uuid.uuid4())))
        txn.commit()
    # The app's own write asks for nothing it does not read (issue 13); a meter still gets its numbers.
    assert capacity_asked == ["NONE", "TOTAL"]
    assert meter.requests == {"TransactWriteItems": 1} and meter.write_capacity > 0
