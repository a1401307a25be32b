"""The lab's page shows the correctness scoreboard's last run (lab/scoreboard.json, written by make scoreboard)."""

import json

from lab import scoreboard
from lab.models import lab_runs_recent
from tems.dynamo import boto3_client

RUN = {"run_at": "2026-12-06 00:00 UTC", "commit": "abc123", "reports": 2, "replayed": 1, "hold": 1, "caught": 1,
       "rows": [
           {"peer": "Attendize", "issue": "#473", "url": "https://github.com/Attendize/Attendize/issues/473",
            "wrong": "The last ticket was ordered several times.", "missing": "", "tems": "passes",
            "tems_seen": "1.0 s", "broken_result": "fails, as it must", "broken_seen": "6 students confirmed"},
           {"peer": "pretalx", "issue": "#2393", "url": "https://github.com/pretalx/pretalx/issues/2393",
            "wrong": "An access code redeemed too often.", "missing": "TEMS has no access codes.", "tems":
            "not replayed", "tems_seen": "", "broken_result": "none", "broken_seen": ""}]}


def test_the_lab_shows_each_reports_results_and_links_it(ddb, staff_client, tmp_path, monkeypatch):
    last_run = tmp_path / "scoreboard.json"
    last_run.write_text(json.dumps(RUN), encoding="utf-8")
    monkeypatch.setattr(scoreboard, "LAST_RUN", last_run)
    page = staff_client.get("/lab/").content.decode()
    assert 'href="#scoreboard"' in page and "1 of\n    2 reports replayed" in page
    assert '<a href="https://github.com/Attendize/Attendize/issues/473" rel="noopener">Attendize #473</a>' in page
    assert "fails, as it must: 6 students confirmed" in page
    assert "not replayed: TEMS has no access codes." in page


def test_without_a_recorded_run_the_lab_says_how_to_make_one(ddb, staff_client, tmp_path, monkeypatch):
    monkeypatch.setattr(scoreboard, "LAST_RUN", tmp_path / "absent.json")
    assert "No run recorded yet" in staff_client.get("/lab/").content.decode()


def test_the_last_seat_row_runs_live_and_leaves_nothing_behind(ddb, staff_client):
    response = staff_client.post("/lab/last-seat/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    [run] = lab_runs_recent(kind="last-seat", limit=5)
    tems, check_first = run.result_dict["production"], run.result_dict["check_then_take"]
    assert (tems["confirmed"], tems["waiting"], tems["seats_shown"], tems["errors"]) == (1, 5, 1, 0)
    assert check_first["confirmed"] >= 1 and check_first["errors"] == 0
    page = response.content.decode()
    assert "on TEMS, <strong>1</strong> of\n    6 got the seat" in page
    assert f"<strong>{check_first['confirmed']}</strong> got the one seat" in page
    left = [item["PK"]["S"] for item in boto3_client().scan(TableName=ddb.table_name)["Items"]
            if "lab-student" in item["PK"]["S"] or item["PK"]["S"].startswith(("EVENTREG#", "EVENTSEATS#"))]
    assert left == []
