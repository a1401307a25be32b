"""deploy/tems.yaml (cfn-lint checks it in `make test`): the table ensure_table creates, and policies that fit
the code."""

import json
import re
import uuid
from io import StringIO
from pathlib import Path

import pytest
from cfnlint.decode import decode
from django.core.management import call_command

from tems import telemetry
from tems.dynamo import TTL_ATTRIBUTE, boto3_client

TEMPLATE = Path(__file__).resolve().parents[2] / "deploy" / "tems.yaml"


@pytest.fixture(scope="module")
def template() -> dict:
    parsed, errors = decode(str(TEMPLATE))
    assert not errors, errors
    return parsed


def policy_statements(template: dict, name: str) -> list[dict]:
    return template["Resources"][name]["Properties"]["PolicyDocument"]["Statement"]


def allowed_actions(template: dict, *names: str) -> set[str]:
    return {action.removeprefix("dynamodb:") for name in names for statement in policy_statements(template, name)
            for action in statement["Action"]}


def test_the_template_declares_the_table_that_ensure_table_creates(template, moto_ddb):
    # moto_ddb made its table with ensure_table(); compare what that produced with what the stack declares.
    client = boto3_client()
    created = client.describe_table(TableName=moto_ddb.table_name)["Table"]
    ttl = client.describe_time_to_live(TableName=moto_ddb.table_name)["TimeToLiveDescription"]
    declared = template["Resources"]["Table"]["Properties"]

    def attributes(definitions):
        return sorted((a["AttributeName"], a["AttributeType"]) for a in definitions)

    def indexes(found):
        return sorted((i["IndexName"], json.dumps(i["KeySchema"]), i["Projection"]["ProjectionType"]) for i in found)

    assert attributes(declared["AttributeDefinitions"]) == attributes(created["AttributeDefinitions"])
    assert declared["KeySchema"] == created["KeySchema"]
    assert indexes(declared["GlobalSecondaryIndexes"]) == indexes(created["GlobalSecondaryIndexes"])
    assert declared["BillingMode"] == created["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert declared["TimeToLiveSpecification"] == {"AttributeName": ttl["AttributeName"], "Enabled": True}
    assert ttl["AttributeName"] == TTL_ATTRIBUTE and ttl["TimeToLiveStatus"] in {"ENABLED", "ENABLING"}


def test_the_table_is_protected(template):
    table = template["Resources"]["Table"]
    properties = table["Properties"]
    assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain"
    assert properties["DeletionProtectionEnabled"] is True
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["SSESpecification"] == {"SSEEnabled": True}


def test_the_policies_reach_only_the_table_and_its_indexes(template):
    for name in ("AppPolicy", "OperatorPolicy"):
        for statement in policy_statements(template, name):
            assert statement["Effect"] == "Allow"
            assert all(action.startswith("dynamodb:") and "*" not in action for action in statement["Action"])
            assert statement["Resource"] in ({"Fn::GetAtt": ["Table", "Arn"]}, {"Fn::Sub": "${Table.Arn}/index/*"})


# A transaction is authorised item by item: TransactWriteItems needs the action of each kind of item it holds.
IAM_ACTIONS_OF = {
    "TransactWriteItems": {"PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
    "TransactGetItems": {"GetItem"},
}


def iam_actions(operations) -> set[str]:
    return {action for operation in operations for action in IAM_ACTIONS_OF.get(operation, {operation})}


def test_the_app_policy_allows_every_request_the_app_sends_and_no_scan(template, ddb, staff_client, student_client,
                                                                       mailoutbox, dynamodb_calls):
    from tems.outbox import outbox_relay
    from tests.registrations.helpers import make_event

    def send(client, method, url, body=None):
        response = getattr(client, method)(url, data=json.dumps(body) if body is not None else None,
                                           content_type="application/json", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
        assert response.status_code < 400, (url, response.content)
        return response

    event = make_event(capacity=1, title="Policy night")
    for page in ("/events/", f"/events/{event.event_id}/", "/me/registrations/", "/api/me/registrations"):
        assert student_client.get(page).status_code == 200
    mine = send(student_client, "post", f"/api/events/{event.event_id}/registrations").json()
    send(staff_client, "post", f"/api/events/{event.event_id}/registrations")  # waitlisted
    send(student_client, "delete", f"/api/registrations/{mine['registration_id']}")  # promotes the staffer
    send(staff_client, "post", "/api/inventory", {"sku": "POLICY-1", "name": "Mug", "quantity": 5})
    send(staff_client, "post", "/api/inventory/POLICY-1/adjustments", {"delta": -1, "reason": "sold"})
    for page in ("/inventory/", "/inventory/POLICY-1/", "/inventory/POLICY-1/history/", "/diagnostics/write-metrics/"):
        assert staff_client.get(page).status_code == 200
    send(staff_client, "post", "/api/lab/registration-race",
         {"technique": "production", "taps": 3, "same_key": False, "latency_ms": 0})
    send(staff_client, "post", "/api/lab/lost-update", {"technique": "versioned", "writers": 2, "units_each": 1})
    outbox_relay()
    sent = set(dynamodb_calls)
    assert {"TransactWriteItems", "Query", "GetItem", "BatchWriteItem"} <= sent, sent  # the flows above really ran
    assert iam_actions(sent) <= allowed_actions(template, "AppPolicy"), sent
    assert "Scan" not in allowed_actions(template, "AppPolicy")

    dynamodb_calls.clear()
    call_command("check_invariants", stdout=StringIO())
    call_command("ensure_table", stdout=StringIO())
    assert {"Scan", "DescribeTable", "DescribeTimeToLive"} <= set(dynamodb_calls), dynamodb_calls
    assert iam_actions(dynamodb_calls) <= allowed_actions(template, "AppPolicy", "OperatorPolicy")


# --- alarms and the dashboard: on the metrics the app emits, by the names agreed with it ----------------------

# The metric names the app emits (CloudWatch EMF, namespace TEMS, dimension set []): the contract the alarms and
# the dashboard are built on, listed in docs/DEPLOY.md, taken from the code that emits them.
TEMS_METRICS = telemetry.METRIC_NAMES


def alarms(template: dict) -> dict[str, dict]:
    return {name: resource["Properties"] for name, resource in template["Resources"].items()
            if resource["Type"] == "AWS::CloudWatch::Alarm"}


def alarm_metrics(properties: dict) -> list[dict]:
    """Each metric an alarm reads: its own, or those of its metric math."""
    if "MetricName" in properties:
        return [{"Namespace": properties["Namespace"], "MetricName": properties["MetricName"],
                 **({"Dimensions": properties["Dimensions"]} if "Dimensions" in properties else {})}]
    return [query["MetricStat"]["Metric"] for query in properties["Metrics"] if "MetricStat" in query]


def dashboard_body(template: dict) -> dict:
    body, variables = template["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    values = {"AWS::Region": "eu-west-1", "OutboxLagAlarmSeconds": "120", **{name: "tems" for name in variables}}
    rendered = re.sub(r"\$\{([^}]+)\}", lambda m: values.get(m.group(1), f"arn:aws:cloudwatch:{m.group(1)}"), body)
    return json.loads(rendered)


def test_alarms_watch_outbox_lag_throttles_and_server_errors(template):
    watched = {name: {m["MetricName"] for m in alarm_metrics(properties)}
               for name, properties in alarms(template).items()}
    assert watched["OutboxLagAlarm"] == {"OutboxLagSeconds"}
    assert watched["ThrottleAlarm"] == {"Throttle"}
    assert watched["ServerErrorAlarm"] == {"Answer5xx", "Answer503"}
    # No relay reporting is as bad as a late one; a quiet app is not an error.
    assert alarms(template)["OutboxLagAlarm"]["TreatMissingData"] == "breaching"
    assert alarms(template)["ServerErrorAlarm"]["TreatMissingData"] == "notBreaching"
    for properties in alarms(template).values():
        assert properties["AlarmActions"] == [{"Ref": "AlarmTopic"}]


def test_alarms_and_dashboard_use_only_the_metrics_the_app_emits_without_dimensions(template):
    for name, properties in alarms(template).items():
        for metric in alarm_metrics(properties):
            assert metric["Namespace"] == "TEMS" and metric["MetricName"] in TEMS_METRICS, (name, metric)
            assert "Dimensions" not in metric, name  # the app emits each under the empty dimension set
    charted = set()
    for widget in dashboard_body(template)["widgets"]:
        for metric in widget["properties"].get("metrics", []):
            if metric[0] == "TEMS":
                assert len(metric) == 2, metric  # namespace and name: no dimensions
                charted.add(metric[1])
    assert charted == TEMS_METRICS


def test_the_dashboard_shows_every_alarm(template):
    shown = next(w for w in dashboard_body(template)["widgets"] if w["type"] == "alarm")["properties"]["alarms"]
    assert len(shown) == len(alarms(template))
