"""A team's approval setting: only a platform admin sets it, validated, and hostile input is a 400 with a readable
message, never a 5xx. On moto: no race here."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tems.models import Membership, Team
from tems.permissions import TEAM_ADMIN
from tests.tems.test_teams_views import HOSTILE


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def teams(db):
    union = Team.objects.create(id="union", name="Students' Union")
    chess = Team.objects.create(id="chess", name="Chess Society")
    admin = User.objects.create_user("ada", password="pw")
    Membership.objects.create(user=admin, team=chess, role=TEAM_ADMIN)
    return {"root": logged_in(User.objects.create_user("root", password="pw", is_staff=True)),
            "ada": logged_in(admin), "union": union, "chess": chess}


def test_a_platform_admin_makes_a_society_need_approval_by_another_team(teams, moto_ddb):
    response = teams["root"].post("/teams/chess/approval/", {"needs_approval": "on", "overseen_by": "union"})
    assert response.status_code == 302
    chess = Team.objects.get(pk="chess")
    assert chess.needs_approval and chess.overseen_by_id == "union"
    # The team's own admin reads it on the team's page, and may not change it.
    page = teams["ada"].get("/teams/chess/").content.decode()
    assert "wait for approval by Students&#x27; Union" in page
    assert teams["ada"].post("/teams/chess/approval/", {"overseen_by": ""}).status_code == 403
    assert teams["root"].post("/teams/chess/approval/", {"overseen_by": ""}).status_code == 302
    assert not Team.objects.get(pk="chess").needs_approval


@pytest.mark.parametrize("posted, problem", [
    ({"needs_approval": "on", "overseen_by": ""}, "Choose the team that approves"),
    ({"needs_approval": "on", "overseen_by": "chess"}, "Select a valid choice"),
    ({"needs_approval": "on", "overseen_by": "nobody"}, "Select a valid choice"),
])
def test_an_approval_setting_that_cannot_work_is_refused_with_a_reason(teams, moto_ddb, posted, problem):
    response = teams["root"].post("/teams/chess/approval/", posted)
    assert response.status_code == 400 and problem in response.content.decode()
    assert not Team.objects.get(pk="chess").needs_approval


def test_two_teams_cannot_oversee_each_other(teams, moto_ddb):
    assert teams["root"].post("/teams/union/approval/", {"needs_approval": "on", "overseen_by": "chess"}
                              ).status_code == 302
    response = teams["root"].post("/teams/chess/approval/", {"needs_approval": "on", "overseen_by": "union"})
    assert response.status_code == 400 and "cannot approve each other" in response.content.decode()


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_input_on_the_approval_fields_is_a_readable_400(teams, moto_ddb, value):
    for posted in ({"needs_approval": value, "overseen_by": value}, {"needs_approval": "on", "overseen_by": value}):
        response = teams["root"].post("/teams/chess/approval/", posted)
        assert response.status_code in (302, 400), (value, response.status_code)
        if response.status_code == 400:
            assert 'class="field-error"' in response.content.decode()
    assert Team.objects.get(pk="chess").overseen_by_id in (None, "union")
