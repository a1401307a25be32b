"""The double-click lab on DynamoDB Local: the naive techniques really fail, the safe ones really hold."""

import json

import pytest
from django.test import override_settings

from lab.lost_update_race import lost_update_race
from lab.models import lab_runs_recent, lab_slot
from lab.registration_race import registration_race, technique_costs
from tems.dynamo import boto3_client, current_config
from tests.helpers import assert_invariants_clean


def table_item_count() -> int:
    return boto3_client().scan(TableName=current_config().table_name, Select="COUNT", ConsistentRead=True)["Count"]


def assert_clean():
    assert_invariants_clean()


def test_naive_registration_really_double_registers_under_default_settings(ddb):
    result = registration_race(technique="naive", taps=10, same_key=False, latency_ms=20)
    assert result["records_created"] > 1
    assert result["distinct_registration_ids"] == result["records_created"]
    assert result["claims"] == 0
    # The run cleans up after itself: the duplicates taught their lesson and are gone.
    assert table_item_count() == 0
    assert_clean()


@pytest.mark.parametrize("same_key", [False, True])
def test_production_registers_exactly_once(ddb, same_key):
    result = registration_race(technique="production", taps=20, same_key=same_key, latency_ms=20)
    assert (result["records_created"], result["distinct_registration_ids"], result["claims"], result["counter"]) \
        == (1, 1, 1, 1)
    assert sum(result["responses"].values()) == 20
    loser = "replayed" if same_key else "already_registered"
    assert result["responses"] == {"created": 1, loser: 19}
    assert result["dynamodb_requests"] >= 20 and result["consumed_wcu"] > 0
    assert table_item_count() == 0


def test_wrapper_alone_holds_for_retries_but_not_for_double_clicks(ddb):
    retries = registration_race(technique="powertools", taps=10, same_key=True, latency_ms=20)
    clicks = registration_race(technique="powertools", taps=10, same_key=False, latency_ms=20)
    assert retries["records_created"] == 1
    assert clicks["records_created"] > 1


@pytest.mark.parametrize("technique", ["claim", "transaction"])
def test_claim_techniques_hold(ddb, technique):
    result = registration_race(technique=technique, taps=10, same_key=False, latency_ms=20)
    assert (result["records_created"], result["claims"], result["counter"]) == (1, 1, 1)


def test_naive_get_then_put_loses_units_and_the_safe_paths_do_not(ddb):
    naive = lost_update_race(technique="naive", writers=10, units_each=2)
    assert naive["lost_units"] > 0 and naive["final_quantity"] > naive["expected_quantity"]
    for technique in ("versioned", "atomic"):
        result = lost_update_race(technique=technique, writers=10, units_each=2)
        assert result["lost_units"] == 0, technique
        assert result["final_quantity"] == result["expected_quantity"] == 10
    assert table_item_count() <= 3  # only the operations' metrics items remain
    assert_clean()


def test_costs_show_one_request_per_first_tap_only_for_production(ddb):
    costs = technique_costs()
    assert costs["production"]["first_requests"] == 1 and costs["production"]["retry_requests"] == 1
    assert costs["naive"]["first_requests"] == 5
    assert costs["all_three"]["first_requests"] == 3


# --- API ---------------------------------------------------------------------------------------------------

def post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


RACE = {"technique": "production", "taps": 3, "same_key": True, "latency_ms": 0}


def test_api_registration_race(ddb, staff_client):
    response = post(staff_client, "/api/lab/registration-race", RACE)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"records_created", "distinct_registration_ids", "claims", "counter", "responses",
                         "dynamodb_requests", "consumed_wcu", "elapsed_ms"}
    assert body["records_created"] == 1 and body["responses"] == {"created": 1, "replayed": 2}


def test_api_lost_update(ddb, staff_client):
    response = post(staff_client, "/api/lab/lost-update", {"technique": "atomic", "writers": 4, "units_each": 3})
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"expected_quantity", "final_quantity", "lost_units", "conflicts", "retries", "elapsed_ms"}
    assert body["lost_units"] == 0


@pytest.mark.parametrize(("url", "change", "field"), [
    ("/api/lab/registration-race", {"taps": 0}, "taps"),
    ("/api/lab/registration-race", {"taps": 1000}, "taps"),
    ("/api/lab/registration-race", {"technique": "magic"}, "technique"),
    ("/api/lab/registration-race", {"latency_ms": 500}, "latency_ms"),
    ("/api/lab/lost-update", {"technique": "magic", "writers": 2, "units_each": 1}, "technique"),
    ("/api/lab/lost-update", {"technique": "naive", "writers": 0, "units_each": 1}, "writers"),
])
def test_api_bad_input_is_400(moto_ddb, staff_client, url, change, field):
    response = post(staff_client, url, {**RACE, **change})
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert field in response.json()["errors"]


@override_settings(TEMS_DEMO=False)
def test_student_outside_demo_mode_is_403(moto_ddb, student_client, client):
    assert post(student_client, "/api/lab/registration-race", RACE).status_code == 403
    assert student_client.get("/lab/").status_code == 403
    assert post(client, "/api/lab/registration-race", RACE).status_code == 401
    assert "Lab</a>" not in student_client.get("/events/").content.decode()


@override_settings(TEMS_DEMO=True)
def test_student_in_demo_mode_may_use_the_lab(ddb, student_client):
    assert student_client.get("/lab/").status_code == 200
    assert post(student_client, "/api/lab/registration-race", RACE).status_code == 200


def test_lab_page_keeps_runs_and_charts_them(ddb, staff_client):
    staff_client.post("/lab/registration-race/", {"technique": "naive", "taps": "6", "latency_ms": "20"})
    staff_client.post("/lab/registration-race/", {"technique": "production", "taps": "6", "latency_ms": "20"})
    page = staff_client.get("/lab/").content.decode()
    assert page.count('<tr class="row-bad">') == 1  # the naive run, flagged
    chart = page[page.index("<svg"):page.index("</svg>")]
    assert "All with 6 taps, one key per tap, 20 ms delay" in chart
    assert "Naive read-then-write (broken)" in chart and "TEMS: one transaction" in chart
    fragment = staff_client.post("/lab/registration-race/", {"technique": "claim", "taps": "2", "latency_ms": "0"},
                                 HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and "exactly 1 registration" in fragment
    # Different settings, different chart: the naive run's 6 taps are not set against the claim run's 2.
    chart = fragment[fragment.index("<svg"):fragment.index("</svg>")]
    assert "All with 2 taps, one key per tap, 0 ms delay" in chart
    assert "Claim key + conditional put" in chart and "Naive read-then-write (broken)" not in chart


def test_lab_form_errors_are_readable(ddb, staff_client):
    page = staff_client.post("/lab/registration-race/", {"technique": "naive", "taps": "0", "latency_ms": "20"},
                             HTTP_HX_REQUEST="true").content.decode()
    assert "Ensure this value is greater than or equal to 1." in page


def test_a_measurement_while_every_slot_is_taken_is_a_message_and_keeps_nothing(moto_ddb, staff_client):
    with lab_slot(), lab_slot():  # the lab's two runs at once, both going
        costs = staff_client.post("/lab/costs/")
        last_seat = staff_client.post("/lab/last-seat/", HTTP_HX_REQUEST="true")
    assert costs.status_code == 302 and costs["Location"] == "/lab/#decision-table"
    assert last_seat.status_code == 200 and last_seat["HX-Redirect"] == "/lab/#scoreboard"
    assert lab_runs_recent(kind="costs") == lab_runs_recent(kind="last-seat") == []
    said = [str(message) for message in staff_client.get("/lab/").context["messages"]]
    assert said == ["The lab is busy with other runs right now; try again in a few seconds."] * 2
