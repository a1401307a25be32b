"""The capacity model (tests/support/capacity_model.py) throttles at AWS's rates, conflicts and answers as AWS does.

Each test starts its own model in front of the session's DynamoDB Local, with limits small enough to reach in a
second or two on a two-core machine (or a scale factor, where the test is about the scale).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from pynamodb.exceptions import PutError, TransactGetError, TransactWriteError
from pynamodb.transactions import TransactGet

from inventory.models import InventoryItem
from tems.dynamo import LOCAL_CREDENTIALS, TABLE_SCHEMA, TableConfig, configure_models, transaction_connection
from tems.local_dynamodb import free_port
from tems.transactions import (
    TRANSACTION_CONFLICT,
    LabelledTransaction,
    RetryPolicy,
    TransactionCancelled,
)
from tests.capacity import Models, through
from tests.support.capacity_model import (
    REPORT_PATH,
    RESET_PATH,
    CapacityModel,
    format_report,
    read_units,
    write_units,
)
from tests.support.item_size import item_size

pytestmark = pytest.mark.dynamodb_local

REGION = "eu-west-1"
# 1 KB items: key attributes plus padding to 1,000 bytes in all, so each put is exactly 1 WCU.
ONE_KB_PADDING = 1000 - len("PK") - len("SK") - len("d")


@pytest.fixture(scope="module")
def table(dynamodb_local_endpoint):
    """One table for the module, created on DynamoDB Local itself; every test uses its own partition keys."""
    name = f"tems_cap_{uuid.uuid4().hex[:10]}"
    client = _client(dynamodb_local_endpoint)
    client.create_table(TableName=name, **TABLE_SCHEMA)
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    yield name
    client.delete_table(TableName=name)


@pytest.fixture
def start_model(dynamodb_local_endpoint):
    models = Models(dynamodb_local_endpoint)
    yield models.start
    models.stop_all()


@pytest.fixture
def app_on(table, dynamodb_local_endpoint):
    """Point the app's PynamoDB models at a model's endpoint (and back afterwards)."""

    def point(model: CapacityModel) -> None:
        configure_models(through(model, TableConfig(table, dynamodb_local_endpoint, REGION)))

    yield point
    configure_models(TableConfig.from_settings())


def _client(endpoint: str, *, attempts: int = 1, mode: str = "standard"):
    return boto3.client("dynamodb", region_name=REGION, endpoint_url=endpoint, **LOCAL_CREDENTIALS,
                        config=Config(retries={"mode": mode, "total_max_attempts": attempts}))


def _item(pk: str, sk: str, padding: int = ONE_KB_PADDING, **extra: str) -> dict:
    item = {"PK": {"S": pk}, "SK": {"S": sk}, "d": {"S": "x" * (padding - len(pk) - len(sk))}}
    item.update({name: {"S": value} for name, value in extra.items()})
    return item


def _row(report: dict, scope: str) -> dict:
    rows = {row["scope"]: row for row in report["partitions"] + report["tables"]}
    return rows[scope]


# --- units ---------------------------------------------------------------------------------------------------

def test_the_items_these_tests_write_are_one_kb_each():
    # The unit arithmetic below counts on it (item sizes themselves: tests/support/test_item_size.py).
    assert item_size(_item("p", "s")) == 1000


def test_units_per_item_size():
    assert write_units(1536) == 2  # 1 WCU per started KB
    assert write_units(1536, transactional=True) == 4
    assert write_units(0) == 1
    assert read_units(5 * 1024, consistent=True) == 2  # 1 RCU per started 4 KB
    assert read_units(5 * 1024, consistent=False) == 1
    assert read_units(5 * 1024, consistent=True, transactional=True) == 4


def test_the_model_charges_each_partition_what_aws_would(table, start_model):
    model = start_model()
    client = _client(model.endpoint)
    run = uuid.uuid4().hex[:6]
    one_and_half_kb = 1536 - 6

    client.put_item(TableName=table, Item=_item(f"put-{run}", "s", one_and_half_kb))
    client.transact_write_items(TransactItems=[{"Put": {"TableName": table,
                                                        "Item": _item(f"tx-{run}", "s", one_and_half_kb)}}])
    client.put_item(TableName=table, Item=_item(f"gsi-{run}", "s", one_and_half_kb, GSI1PK=f"g1-{run}", GSI1SK="a"))
    # Moving the index key is a delete on the old index partition plus a put on the new one.
    client.update_item(TableName=table, Key={"PK": {"S": f"gsi-{run}"}, "SK": {"S": "s"}},
                       UpdateExpression="SET GSI1PK = :g", ExpressionAttributeValues={":g": {"S": f"g2-{run}"}})
    # Replacing a 1.5 KB item by a small one costs the larger of the two, and deletes its index entry.
    client.put_item(TableName=table, Item=_item(f"swap-{run}", "s", one_and_half_kb, GSI1PK=f"g3-{run}", GSI1SK="a"))
    client.put_item(TableName=table, Item={"PK": {"S": f"swap-{run}"}, "SK": {"S": "s"}})
    client.delete_item(TableName=table, Key={"PK": {"S": f"swap-{run}"}, "SK": {"S": "s"}})
    client.put_item(TableName=table, Item=_item(f"read-{run}", "s", 5 * 1024))
    client.get_item(TableName=table, Key={"PK": {"S": f"read-{run}"}, "SK": {"S": "s"}}, ConsistentRead=True)
    report = model.report()
    assert _row(report, f"{table}|PK=read-{run}")["rcu_consumed"] == 2
    client.get_item(TableName=table, Key={"PK": {"S": f"read-{run}"}, "SK": {"S": "s"}})
    client.transact_get_items(TransactItems=[{"Get": {"TableName": table,
                                                      "Key": {"PK": {"S": f"read-{run}"}, "SK": {"S": "s"}}}}])

    report = model.report()
    assert _row(report, f"{table}|PK=put-{run}")["wcu_consumed"] == 2
    assert _row(report, f"{table}|PK=tx-{run}")["wcu_consumed"] == 4
    assert _row(report, f"{table}|PK=gsi-{run}")["wcu_consumed"] == 2 + 2  # the put, then the update
    assert _row(report, f"{table}/GSI1|GSI1PK=g1-{run}")["wcu_consumed"] == 2 + 2  # entry put, then deleted
    assert _row(report, f"{table}/GSI1|GSI1PK=g2-{run}")["wcu_consumed"] == 2
    assert _row(report, f"{table}|PK=swap-{run}")["wcu_consumed"] == 2 + 2 + 1  # put, replace, delete (small)
    assert _row(report, f"{table}/GSI1|GSI1PK=g3-{run}")["wcu_consumed"] == 2 + 2  # entry put, then deleted
    # 5 KB: 2 RCU strongly consistent, 1 eventually consistent, 4 in a transaction.
    assert _row(report, f"{table}|PK=read-{run}")["rcu_consumed"] == 2 + 1 + 4
    assert "scale x1" in format_report(report)


def test_the_answer_is_the_one_the_client_asked_for(table, start_model):
    """The model asks upstream for images and capacity it needs; the client gets exactly what it asked for."""
    model = start_model()
    client = _client(model.endpoint, mode="legacy")  # the mode that checks each answer's x-amz-crc32
    key = {"PK": {"S": f"answer-{uuid.uuid4().hex[:6]}"}, "SK": {"S": "s"}}
    client.put_item(TableName=table, Item={**key, "n": {"N": "1"}})
    updated = client.update_item(TableName=table, Key=key, UpdateExpression="SET n = n + :one",
                                 ExpressionAttributeValues={":one": {"N": "1"}})
    assert "Attributes" not in updated
    updated = client.update_item(TableName=table, Key=key, UpdateExpression="SET n = n + :one",
                                 ExpressionAttributeValues={":one": {"N": "1"}}, ReturnValues="UPDATED_OLD")
    assert updated["Attributes"] == {"n": {"N": "2"}}
    read = client.get_item(TableName=table, Key=key)
    assert read["Item"]["n"] == {"N": "3"} and "ConsumedCapacity" not in read
    put = client.put_item(TableName=table, Item={**key, "n": {"N": "4"}})
    assert "Attributes" not in put
    put = client.put_item(TableName=table, Item={**key, "n": {"N": "5"}}, ReturnValues="ALL_OLD")
    assert put["Attributes"] == {**key, "n": {"N": "4"}}
    deleted = client.delete_item(TableName=table, Key=key)
    assert "Attributes" not in deleted
    read = client.get_item(TableName=table, Key=key, ReturnConsumedCapacity="TOTAL")
    assert read["ConsumedCapacity"]["CapacityUnits"] == 0.5


# --- throttling ----------------------------------------------------------------------------------------------

def test_a_hot_key_is_throttled_at_the_partition_limit_and_a_cool_key_never(table, start_model):
    limit = 10  # WCU per second per partition (AWS's 1,000, lowered so a test reaches it in a moment)
    model = start_model(partition_wcu=limit)
    run = uuid.uuid4().hex[:6]
    hot, cool = f"hot-{run}", f"cool-{run}"
    cool_refusals: list[ClientError] = []

    def cool_writer() -> None:
        client = _client(model.endpoint)
        for n in range(10):  # 5 WCU/s, half the limit
            try:
                client.put_item(TableName=table, Item=_item(cool, str(n)))
            except ClientError as error:
                cool_refusals.append(error)
            time.sleep(0.2)

    cool_thread = threading.Thread(target=cool_writer)
    cool_thread.start()
    client = _client(model.endpoint)
    accepted: list[float] = []
    refusals: list[tuple[float, float]] = []  # (sent, answered)
    started = time.monotonic()
    n = 0
    while time.monotonic() - started < 2.5:
        n += 1
        sent = time.monotonic()
        try:
            client.put_item(TableName=table, Item=_item(hot, str(n)))
            accepted.append(time.monotonic())
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
            refusals.append((sent, time.monotonic()))
    throttled = len(refusals)
    cool_thread.join()

    assert throttled > 0 and not cool_refusals
    # In any 1 s window no more than the limit was accepted (one unit of slack for client/server clock offsets).
    assert max(sum(1 for t in accepted if start <= t < start + 1) for start in accepted) <= limit + 1
    # ...and it is throttled, not starved: each refusal came when the last second already held the limit's worth
    # of accepted writes. (The model saw the refusal somewhere between its sending and its answer, so its second
    # reaches back a second from the sending.) No clock decides this, so a slow machine cannot fail it.
    before = [(sent, sum(1 for t in accepted if sent - 1 <= t <= answered)) for sent, answered in refusals]
    short = [(sent, count) for sent, count in before if count < limit - 1]
    assert short == [], short
    report = model.report()
    hot_row = _row(report, f"{table}|PK={hot}")
    assert hot_row["peak_wcu_1s"] == limit and hot_row["peak_wcu_per_s_at_scale"] == limit
    assert hot_row["write_throttles"] == throttled
    assert _row(report, f"{table}|PK={cool}")["write_throttles"] == 0
    assert report["throttles_by_operation"] == {"PutItem": throttled}


@pytest.mark.parametrize("window_seconds", [None, 1.0], ids=["scaled window", "one machine second (too strict)"])
def test_the_limits_window_is_a_real_second_scaled_like_every_duration(table, start_model, window_seconds):
    """At S = 2 a partition takes its 4 WCU per real second over 2 s here, not 2 WCU in any one second: the
    window of one machine second (the model before) refuses a burst AWS takes and lets the next one in early."""
    model = start_model(scale=4, partition_wcu=8, window_seconds=window_seconds)
    client = _client(model.endpoint, attempts=1)
    pk = f"window-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    accepted = 0
    for n in range(10):
        try:
            client.put_item(TableName=table, Item=_item(pk, str(n)))
            accepted += 1
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    # A second after the burst ended: the one-second window has let go of all of it, the real second (4 s here)
    # of none of it (CI's loaded machine once took over 0.2 s for the burst).
    time.sleep(1.05)
    try:
        client.put_item(TableName=table, Item=_item(pk, "later"))
        later = True
    except ClientError:
        later = False
    report = model.report()
    if window_seconds is None:
        assert (accepted, later) == (8, False)  # the burst of a real second fits, and the second is not over
        assert report["window_seconds"] == 4 and time.monotonic() - started < 4
        row = _row(report, f"{table}|PK={pk}")
        assert (row["peak_wcu_per_s_at_scale"], row["aws_limit_wcu_per_s"]) == (8, 8)
        assert (row["peak_wcu_1s"], row["limit_wcu_1s"]) == (2, 2)  # per machine second, averaged
    else:
        assert (accepted, later) == (2, True)  # one machine second holds 1/S of a real second's units


def test_the_throttle_is_the_error_aws_sends(table, start_model):
    model = start_model(partition_wcu=1)  # 1 WCU per second
    client = _client(model.endpoint)
    pk = f"shape-{uuid.uuid4().hex[:6]}"
    client.put_item(TableName=table, Item=_item(pk, "1"))
    with pytest.raises(ClientError) as caught:
        client.put_item(TableName=table, Item=_item(pk, "2"))
    response = caught.value.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert "Throughput exceeds the current capacity" in response["Error"]["Message"]
    assert caught.value.response.get("ThrottlingReasons") == [
        {"reason": "TableWriteKeyRangeThroughputExceeded",
         "resource": f"arn:aws:dynamodb:{REGION}:000000000000:table/{table}"}]


# PynamoDB's clients use botocore's standard mode; a plain boto3 client (tems.dynamo.boto3_client) its legacy one.
@pytest.mark.parametrize("mode", ["standard", "legacy"])
def test_botocore_retries_the_throttle_as_on_aws(table, start_model, mode):
    model = start_model(partition_wcu=2)  # 2 WCU per second
    client = _client(model.endpoint, attempts=6, mode=mode)
    pk = f"retry-{uuid.uuid4().hex[:6]}"
    client.put_item(TableName=table, Item=_item(pk, "1"))
    client.put_item(TableName=table, Item=_item(pk, "2"))
    answer = client.put_item(TableName=table, Item=_item(pk, "3"))  # the window is full: throttled, retried
    retries = answer["ResponseMetadata"]["RetryAttempts"]
    assert retries >= 1
    assert _row(model.report(), f"{table}|PK={pk}")["write_throttles"] == retries


def test_a_throttled_transaction_is_cancelled_with_throttling_error(table, start_model, app_on):
    model = start_model(partition_wcu=1)  # 1 WCU per second: a transactional write (2 WCU) fills it
    app_on(model)
    sku = f"thr-{uuid.uuid4().hex[:6]}"
    InventoryItem(*InventoryItem.key_for(sku), sku=sku, name="n", gsi1sk=sku).save()
    transaction = LabelledTransaction()
    transaction.update("bump", InventoryItem.get(*InventoryItem.key_for(sku)), [InventoryItem.quantity.add(1)])
    with pytest.raises(TransactionCancelled) as caught:
        transaction.commit()
    assert caught.value.failed("bump", "ThrottlingError")
    assert caught.value.is_conflict  # transient like a conflict: the services' retry loops pause and try again


# --- transaction conflicts ------------------------------------------------------------------------------------

def _bump(sku: str, *, other_sku: str | None = None) -> None:
    transaction = LabelledTransaction()
    if other_sku:
        transaction.update("other", InventoryItem(*InventoryItem.key_for(other_sku)),
                           [InventoryItem.quantity.add(1)], add_version_condition=False)
    transaction.update("hot", InventoryItem(*InventoryItem.key_for(sku)), [InventoryItem.quantity.add(1)],
                       add_version_condition=False)
    transaction.commit()


def _stock(sku: str) -> InventoryItem:
    item = InventoryItem(*InventoryItem.key_for(sku), sku=sku, name="n", gsi1sk=sku)
    item.save()
    return item


def test_an_item_a_transaction_holds_conflicts_as_on_aws(table, start_model, app_on):
    model = start_model(hold_ms=3000)  # long enough for the requests below to land inside the hold
    app_on(model)
    run = uuid.uuid4().hex[:6]
    hot, other = _stock(f"hot-{run}"), _stock(f"other-{run}")
    _bump(hot.sku)

    # A transaction on the held item: TransactionCanceledException, the reason on that item, read by PynamoDB.
    with pytest.raises(TransactionCancelled) as caught:
        _bump(hot.sku, other_sku=other.sku)
    assert list(caught.value.reasons) == ["hot"]
    assert caught.value.failed("hot", TRANSACTION_CONFLICT) and caught.value.is_conflict
    cause: TransactWriteError = caught.value.cause
    assert cause.cause_response_code == "TransactionCanceledException"
    assert [reason and reason.code for reason in cause.cancellation_reasons] == [None, TRANSACTION_CONFLICT]

    # A single write to it: TransactionConflictException.
    with pytest.raises(PutError) as put_caught:
        hot.save()
    assert put_caught.value.cause_response_code == "TransactionConflictException"

    # A transactional read of it is cancelled; a plain read is not.
    with pytest.raises(TransactGetError) as get_caught, TransactGet(connection=transaction_connection()) as reads:
        reads.get(InventoryItem, *InventoryItem.key_for(hot.sku))
    assert [r and r.code for r in get_caught.value.cancellation_reasons] == [TRANSACTION_CONFLICT]
    assert InventoryItem.get(*InventoryItem.key_for(hot.sku)).quantity == 1

    report = model.report()
    assert report["conflicts_by_operation"] == {"TransactWriteItems": 1, "PutItem": 1, "TransactGetItems": 1}
    assert report["hold_ms_real"] == 3000 and report["scale"] == 1


def test_the_hold_time_is_scaled(table, start_model, app_on):
    model = start_model(hold_ms=10, scale=100)  # 10 ms at AWS -> 1 s here
    app_on(model)
    item = _stock(f"scaled-{uuid.uuid4().hex[:6]}")
    _bump(item.sku)
    with pytest.raises(TransactionCancelled):
        _bump(item.sku)
    time.sleep(1.05)
    _bump(item.sku)  # the hold is over


def test_a_transaction_answers_when_its_hold_ends_so_its_client_never_meets_it(table, start_model, app_on):
    """By default (the bench, ``python -m tests.support.capacity_model``) a transaction's latency is its hold, as on
    AWS: another client inside the hold conflicts, and the same client's next request never meets its own last one."""
    # 10 ms at AWS -> 2 s here.
    model = start_model(hold_ms=10, scale=200, answer_after_hold=True)
    app_on(model)
    item = _stock(f"after-{uuid.uuid4().hex[:6]}")
    passed_on = model.report()["transaction_in_flight_ms"]["count"]
    met: list[BaseException] = []

    def another_client() -> None:
        # Inside the first transaction's hold: once the model has passed it on, its item is held for the hold
        # from then. Waiting for that, not for a time, keeps the order on a loaded machine, where the first
        # transaction can take longer to reach the model than any fixed head start.
        deadline = time.monotonic() + 30
        while model.report()["transaction_in_flight_ms"]["count"] == passed_on and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            _bump(item.sku)
        except TransactionCancelled as conflict:
            met.append(conflict)

    other = threading.Thread(target=another_client)
    started = time.monotonic()
    other.start()
    _bump(item.sku)
    answered = time.monotonic() - started
    other.join()
    _bump(item.sku)  # at once, from the same client: its own transaction is over
    assert answered >= 1.95
    assert len(met) == 1 and met[0].is_conflict
    assert model.report()["conflicts_by_operation"] == {"TransactWriteItems": 1}
    assert InventoryItem.get(*InventoryItem.key_for(item.sku)).quantity == 2


def test_the_apps_retry_path_sees_the_conflict_and_gets_through(table, start_model, app_on):
    model = start_model(hold_ms=500)
    app_on(model)
    item = _stock(f"retry-{uuid.uuid4().hex[:6]}")
    _bump(item.sku)
    waits: list[float] = []

    def sleep(delay: float) -> None:
        waits.append(delay)
        time.sleep(0.2)  # fixed, so the test does not depend on the jitter drawn

    RetryPolicy(attempts=6, sleep=sleep).run(lambda: _bump(item.sku),
                                             busy=lambda last: AssertionError(f"gave up: {last}"))
    assert 1 <= len(waits) <= 4
    assert model.report()["conflicts"] == len(waits)
    assert InventoryItem.get(*InventoryItem.key_for(item.sku)).quantity == 2


def test_the_apps_retry_path_gives_up_with_its_busy_error(table, start_model, app_on):
    model = start_model(hold_ms=5000)
    app_on(model)
    item = _stock(f"busy-{uuid.uuid4().hex[:6]}")
    _bump(item.sku)

    class Busy(Exception):
        pass

    with pytest.raises(Busy):
        RetryPolicy(attempts=3, sleep=lambda _: None).run(lambda: _bump(item.sku),
                                                          busy=lambda last: Busy(str(last)))
    assert model.report()["conflicts"] == 3


def test_a_transaction_repeated_with_its_token_is_not_a_conflict_with_itself(table, start_model):
    """botocore repeats a TransactWriteItems with the same ClientRequestToken; AWS answers it as that one."""
    model = start_model(hold_ms=3000)
    client = _client(model.endpoint)
    key = {"PK": {"S": f"token-{uuid.uuid4().hex[:6]}"}, "SK": {"S": "s"}}
    items = [{"Update": {"TableName": table, "Key": key, "UpdateExpression": "ADD n :one",
                         "ExpressionAttributeValues": {":one": {"N": "1"}}}}]
    token = str(uuid.uuid4())
    client.transact_write_items(TransactItems=items, ClientRequestToken=token)
    client.transact_write_items(TransactItems=items, ClientRequestToken=token)
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(TransactItems=items, ClientRequestToken=str(uuid.uuid4()))
    assert caught.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert caught.value.response["CancellationReasons"][0]["Code"] == TRANSACTION_CONFLICT
    assert client.get_item(TableName=table, Key=key)["Item"]["n"] == {"N": "1"}  # applied once


def test_a_batch_write_hands_back_what_was_throttled(table, start_model):
    model = start_model(partition_wcu=2)  # 2 WCU per second per partition
    client = _client(model.endpoint)
    pk = f"batch-{uuid.uuid4().hex[:6]}"
    requests = [{"PutRequest": {"Item": _item(pk, str(n))}} for n in range(5)]
    answer = client.batch_write_item(RequestItems={table: requests})
    assert answer["UnprocessedItems"][table] == requests[2:]
    with pytest.raises(ClientError) as caught:  # nothing of it fits: the whole request is throttled
        client.batch_write_item(RequestItems={table: requests[2:]})
    assert caught.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert len(client.query(TableName=table, KeyConditionExpression="PK = :pk",
                            ExpressionAttributeValues={":pk": {"S": pk}})["Items"]) == 2


def test_a_request_the_model_cannot_read_gets_dynamodb_locals_own_answer(table, start_model):
    model = start_model()
    with pytest.raises(ClientError) as caught:
        _client(model.endpoint).put_item(TableName=table, Item={"SK": {"S": "no partition key"}})
    assert caught.value.response["Error"]["Code"] == "ValidationException"


def test_the_report_and_reset_over_http(table, start_model):
    model = start_model(scale=4)
    _client(model.endpoint).put_item(TableName=table, Item=_item(f"http-{uuid.uuid4().hex[:6]}", "s"))
    with urllib.request.urlopen(model.endpoint + REPORT_PATH + "?top=0") as answer:
        report = json.load(answer)
    assert report["scale"] == 4 and report["requests"] == {"PutItem": 1}
    assert report["partitions"] == [] and report["partition_count"] == 1
    assert report["tables"][0]["limit_wcu_1s"] == 1000
    urllib.request.urlopen(urllib.request.Request(model.endpoint + RESET_PATH, method="POST")).close()
    assert model.report()["requests"] == {} and model.report()["partitions"] == []


# --- the app's own retry paths, through the model ------------------------------------------------------------

def test_a_stock_adjustment_retries_past_a_held_item(table, start_model, app_on):
    """inventory.services.item_adjust meets the conflict AWS would send, backs off, and gets through."""
    from inventory.services import RetryPolicy, item_adjust, item_create

    model = start_model(hold_ms=400)
    app_on(model)
    sku = f"adj-{uuid.uuid4().hex[:6]}"
    item_create(sku=sku, name="n", quantity=5, actor="staff")  # its transaction holds the item for 400 ms
    adjusted = item_adjust(sku=sku, delta=-1, reason="sold", actor="staff",
                           policy=RetryPolicy(attempts=20, sleep=time.sleep, uniform=lambda low, high: 0.1))
    assert adjusted.quantity == 4
    assert model.report()["conflicts_by_operation"]["TransactWriteItems"] >= 1


def test_a_stock_adjustment_held_too_long_answers_busy(table, start_model, app_on):
    from inventory.errors import InventoryError
    from inventory.services import RetryPolicy, item_adjust, item_create

    model = start_model(hold_ms=1500)
    app_on(model)
    sku = f"busy-{uuid.uuid4().hex[:6]}"
    item_create(sku=sku, name="n", quantity=5, actor="staff")  # held for 1.5 s from here
    with pytest.raises(InventoryError) as caught:
        item_adjust(sku=sku, delta=-1, reason="sold", actor="staff",
                    policy=RetryPolicy(attempts=3, sleep=lambda _: None))
    assert caught.value.code == "busy"
    assert model.report()["conflicts"] == 3


def test_a_throttled_stock_adjustment_answers_busy(table, start_model, app_on, monkeypatch):
    from inventory.errors import InventoryError
    from inventory.services import RetryPolicy, item_adjust, item_create
    from inventory.services import metrics as inventory_metrics

    # Metrics are recorded after each call with real-time retries on a table this throttled: on a loaded machine
    # the create's took over a second (CI, stop 18), the item's window emptied, and the adjustment went through.
    monkeypatch.setattr(inventory_metrics, "metrics_record", lambda *, stats: None)
    app_on(start_model(partition_wcu=1, hold_ms=10))  # 1 WCU per second per partition; no conflicts to speak of
    sku = f"thr-{uuid.uuid4().hex[:6]}"
    item_create(sku=sku, name="n", quantity=5, actor="staff")  # fills the item's partition for a second
    with pytest.raises(InventoryError) as caught:
        item_adjust(sku=sku, delta=-1, reason="sold", actor="staff",
                    policy=RetryPolicy(attempts=3, sleep=lambda _: None))
    assert caught.value.code == "busy"


def test_under_concurrency_every_request_gets_one_answer(table, start_model):
    """Sixteen writers race transactions on one item: each is applied, conflicted or throttled, and counted once."""
    model = start_model(partition_wcu=50, hold_ms=400)  # 50 WCU per second; a 400 ms hold
    key = {"PK": {"S": f"race-{uuid.uuid4().hex[:6]}"}, "SK": {"S": "s"}}
    outcomes: list[str] = []
    lock = threading.Lock()

    def writer() -> None:
        client = _client(model.endpoint)
        for _ in range(5):
            try:
                client.transact_write_items(TransactItems=[{"Update": {
                    "TableName": table, "Key": key, "UpdateExpression": "ADD n :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}}}}])
                outcome = "applied"
            except ClientError as error:
                outcome = error.response["CancellationReasons"][0]["Code"]
            with lock:
                outcomes.append(outcome)

    threads = [threading.Thread(target=writer) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    applied = outcomes.count("applied")
    report = model.report()
    assert len(outcomes) == 80 and set(outcomes) <= {"applied", TRANSACTION_CONFLICT, "ThrottlingError"}
    assert report["conflicts"] == outcomes.count(TRANSACTION_CONFLICT) > 0
    assert report["throttles"] == outcomes.count("ThrottlingError")
    stored = _client(model.endpoint).get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]["n"]
    assert int(stored["N"]) == applied >= 1


def test_it_runs_standalone_and_prints_its_report_with_the_scale(dynamodb_local_endpoint):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.capacity_model", "--upstream", dynamodb_local_endpoint,
         "--port", str(port), "--scale", "7", "--hold-ms", "12"],
        cwd=Path(__file__).resolve().parents[2], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{REPORT_PATH}", timeout=1) as answer:
                    report = json.load(answer)
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "the model did not start"
                time.sleep(0.2)
        assert report["scale"] == 7 and report["hold_ms_real"] == pytest.approx(84)
        tables = _client(f"http://127.0.0.1:{port}").list_tables()  # passed through unchanged
        assert "TableNames" in tables
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=10)
    assert process.returncode == 0
    assert "capacity model: scale x7" in output


def test_reads_are_charged_to_the_partition_they_read_and_throttled_there(table, start_model):
    model = start_model(partition_rcu=1)  # one strongly consistent 4 KB read per second per partition
    client = _client(model.endpoint)
    run = uuid.uuid4().hex[:6]
    client.put_item(TableName=table, Item=_item(f"q-{run}", "s", GSI1PK=f"col-{run}", GSI1SK="a"))
    client.query(TableName=table, IndexName="GSI1", KeyConditionExpression="#pk = :pk AND begins_with(GSI1SK, :a)",
                 ExpressionAttributeNames={"#pk": "GSI1PK"}, ExpressionAttributeValues={
                     ":pk": {"S": f"col-{run}"}, ":a": {"S": "a"}})
    assert _row(model.report(), f"{table}/GSI1|GSI1PK=col-{run}")["rcu_consumed"] == 0.5
    key = {"PK": {"S": f"q-{run}"}, "SK": {"S": "s"}}
    client.get_item(TableName=table, Key=key, ConsistentRead=True)
    with pytest.raises(ClientError) as caught:
        client.get_item(TableName=table, Key=key, ConsistentRead=True)
    assert caught.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert caught.value.response["ThrottlingReasons"][0]["reason"] == "TableReadKeyRangeThroughputExceeded"
    assert _row(model.report(), f"{table}|PK=q-{run}")["read_throttles"] == 1


def test_table_management_passes_through(start_model):
    """ensure_table (CreateTable, DescribeTable, the TTL calls) works through the model as against DynamoDB Local."""
    from tems.dynamo import ensure_table

    client = _client(start_model().endpoint)
    name = f"tems_cap_mgmt_{uuid.uuid4().hex[:8]}"
    try:
        assert ensure_table(client=client, table_name=name) == [f"created table {name}", "enabled TTL on expires_at"]
        assert ensure_table(client=client, table_name=name) == []
    finally:
        client.delete_table(TableName=name)
