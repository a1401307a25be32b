"""The fault-injection layer itself, and what DynamoDB (Local) does with a retried ClientRequestToken."""

import uuid
from datetime import timedelta

import pytest
from botocore.exceptions import ClientError
from pynamodb.exceptions import PutError, UpdateError

from tems.clock import utcnow
from tems.dynamo import boto3_client, current_config
from tems.idempotency import IdempotencyRecord
from tems.transactions import LabelledTransaction, TransactionCancelled
from tests.support.faults import CONFLICT, ERROR, LOST, THROTTLE, Fault, inject


def new_record(**fields) -> IdempotencyRecord:
    key = str(uuid.uuid4())
    return IdempotencyRecord(*IdempotencyRecord.key_for("u1", key), user_id="u1", key=key, fingerprint="fp",
                             status="COMPLETED", expires_at=utcnow() + timedelta(hours=1), **fields)


def counter(record: IdempotencyRecord) -> int:
    return int(IdempotencyRecord.get(record.pk, record.sk, consistent_read=True).response_status)


def bump(record: IdempotencyRecord) -> None:
    record.update(actions=[IdempotencyRecord.response_status.add(1)])


def transact_bump(record: IdempotencyRecord) -> None:
    transaction = LabelledTransaction()
    transaction.update("counter", IdempotencyRecord(record.pk, record.sk),
                       actions=[IdempotencyRecord.response_status.add(1)])
    transaction.commit()


def test_dynamodb_local_answers_a_repeated_token_without_applying_again(ddb):
    record = new_record(response_status=0)
    record.save()
    client = boto3_client()
    request = {"TransactItems": [{"Update": {
        "TableName": current_config().table_name, "Key": {"PK": {"S": record.pk}, "SK": {"S": record.sk}},
        "UpdateExpression": "ADD response_status :one", "ExpressionAttributeValues": {":one": {"N": "1"}},
    }}], "ClientRequestToken": str(uuid.uuid4())}
    client.transact_write_items(**request)
    client.transact_write_items(**request)  # within the 10-minute window: a success, nothing applied
    assert counter(record) == 1
    request["TransactItems"][0]["Update"]["ExpressionAttributeValues"][":one"]["N"] = "2"
    with pytest.raises(ClientError) as raised:
        client.transact_write_items(**request)
    assert raised.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"


def test_lost_answer_of_a_transaction_is_retried_with_the_same_token_and_applied_once(ddb):
    record = new_record(response_status=0)
    record.save()
    with inject(Fault(LOST, operations={"TransactWriteItems"}, times=1)) as faults:
        transact_bump(record)
    [fired] = faults.fired(LOST)
    assert fired.token  # botocore filled the idempotency token before the first attempt
    assert counter(record) == 1


def test_lost_answer_of_an_unconditional_update_is_applied_twice(ddb):
    record = new_record(response_status=0)
    record.save()
    with inject(Fault(LOST, operations={"UpdateItem"}, times=1)) as faults:
        bump(record)
    assert len(faults.fired(LOST, "UpdateItem")) == 1
    assert counter(record) == 2  # the hazard: the SDK's retry applied the ADD again


def test_lost_answer_of_a_conditional_put_fails_its_own_condition_on_retry(ddb):
    record = new_record()
    with inject(Fault(LOST, operations={"PutItem"}, times=1)), pytest.raises(PutError) as raised:
        record.save(condition=IdempotencyRecord.pk.does_not_exist())
    assert raised.value.cause_response_code == "ConditionalCheckFailedException"
    assert IdempotencyRecord.get(record.pk, record.sk, consistent_read=True).key == record.key


def test_error_500_is_not_applied_and_the_retry_is(ddb):
    record = new_record(response_status=0)
    record.save()
    with inject(Fault(ERROR, operations={"UpdateItem"}, times=2)) as faults:
        bump(record)
    assert [f.attempt for f in faults.fired(ERROR)] == [1, 2]
    assert counter(record) == 1


def test_throttle_is_absorbed_by_the_sdk_unless_it_outlasts_the_retries(ddb):
    record = new_record(response_status=0)
    record.save()
    with inject(Fault(THROTTLE, operations={"UpdateItem"}, times=1)):
        bump(record)
    assert counter(record) == 1
    with inject(Fault(THROTTLE, operations={"UpdateItem"}, final_attempt_too=True)) as faults, \
            pytest.raises(UpdateError) as raised:
        bump(record)
    assert raised.value.cause_response_code == "ProvisionedThroughputExceededException"
    assert len(faults.fired(THROTTLE)) == 4  # PynamoDB's default: 1 + 3 retries
    assert counter(record) == 1


def test_conflict_cancels_the_transaction_with_a_transaction_conflict_reason(ddb):
    record = new_record(response_status=0)
    record.save()
    with inject(Fault(CONFLICT, operations={"TransactWriteItems"}, times=1)), \
            pytest.raises(TransactionCancelled) as raised:
        transact_bump(record)
    assert raised.value.is_conflict
    assert counter(record) == 0


def test_faults_filter_by_operation_and_request(ddb):
    target, other = new_record(response_status=0), new_record(response_status=0)
    target.save()
    other.save()
    only_target = Fault(LOST, operations={"UpdateItem"}, times=1,
                        when=lambda params: params["Key"]["PK"]["S"] == target.pk)
    with inject(only_target):
        bump(other)
        bump(target)
    assert (counter(other), counter(target)) == (1, 2)


def test_unknown_kind_and_conflict_outside_transactions_are_refused():
    with pytest.raises(ValueError):
        Fault("explode")
    with pytest.raises(ValueError):
        Fault(CONFLICT, operations={"PutItem"})


def test_the_same_seed_fires_the_same_faults(ddb):
    record = new_record(response_status=0)
    record.save()

    def run(seed: int) -> list[int]:
        with inject(Fault(ERROR, operations={"UpdateItem"}, probability=0.3), seed=seed) as faults:
            pattern = []
            for _ in range(40):
                before = len(faults.fired())
                bump(record)
                pattern.append(len(faults.fired()) - before)
        return pattern

    first, again, other = run(11), run(11), run(12)
    assert first == again
    assert first != other
    assert 4 <= sum(first) <= 30  # about 30 % of first attempts (and of retries), never every request
