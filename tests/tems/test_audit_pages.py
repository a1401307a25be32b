"""The audit log's pages: an event's log and a team's log in words, filtered and paged; hostile input on every
new field (the filters, the cursor, the retention) gets a 400 with a readable message, never a 5xx. On moto: no
race here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tems.audit import Actor
from tems.audit.models import AuditEntry
from tems.audit.services import new_entry
from tems.identity import user_key
from tems.models import Membership, Team, TeamAuditEntry
from tems.roles import EVENT_MANAGER, TEAM_ADMIN, VIEWER
from tests.registrations.helpers import make_event

HOSTILE = ["", " ", "x" * 5000, "a\x00b", "\u202eevil", "<script>alert(1)</script>", "'; DROP TABLE teams; --",
           "../../etc/passwd", "99999999999999999999999", "-1", "0"]


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def team(db):
    team = Team.objects.create(id="chem", name="Chemistry Society")
    people = {name: User.objects.create_user(name, password="pw", first_name=name.title())
              for name in ("ada", "mia", "val")}
    Membership.objects.create(user=people["ada"], team=team, role=TEAM_ADMIN)
    Membership.objects.create(user=people["mia"], team=team, role=EVENT_MANAGER)
    Membership.objects.create(user=people["val"], team=team, role=VIEWER)
    return people


def put_entries(event_id: str, actor: Actor, n: int, *, action: str = "event_edited") -> None:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    for i in range(n):
        new_entry(actor=actor, action=action, team="chem", event_id=event_id, before={"capacity": 40 + i},
                  after={"capacity": 41 + i}, now=start + timedelta(minutes=i)).save()


def test_the_event_log_says_who_did_what_newest_first_and_pages(moto_ddb, team):
    event = make_event(capacity=40, team="chem")
    mia = Actor(user_id=user_key(team["mia"]), roles={"chem": EVENT_MANAGER})
    put_entries(event.event_id, mia, 25)
    client = logged_in(team["mia"])
    first = client.get(f"/events/{event.event_id}/log/")
    assert first.status_code == 200
    text = first.content.decode()
    assert "Mia" in text and "raised the capacity from 64 to 65" in text and "(event manager)" in text
    assert text.index("from 64 to 65") < text.index("from 63 to 64")  # newest first
    assert "from 44 to 45" not in text and "Older entries" in text
    older = client.get(first.context["next_url"])
    assert "from 44 to 45" in older.content.decode() and "from 64 to 65" not in older.content.decode()
    # A viewer reads figures, not who was checked in: no log.
    assert logged_in(team["val"]).get(f"/events/{event.event_id}/log/").status_code == 403


def test_the_filters_keep_what_they_name(moto_ddb, team):
    event = make_event(capacity=40, team="chem")
    put_entries(event.event_id, Actor(user_id=user_key(team["mia"]), roles={"chem": EVENT_MANAGER}), 2)
    put_entries(event.event_id, Actor(user_id=user_key(team["ada"]), roles={"chem": TEAM_ADMIN}), 1,
                action="attendees_viewed")
    client = logged_in(team["ada"])
    by_action = client.get(f"/events/{event.event_id}/log/", {"action": "attendees_viewed"})
    assert [row.what for row in by_action.context["rows"]] == ["viewed the attendee list"]
    by_actor = client.get(f"/events/{event.event_id}/log/", {"actor": user_key(team["mia"])})
    assert {row.who for row in by_actor.context["rows"]} == {"Mia"} and len(by_actor.context["rows"]) == 2
    # A cursor of one filter is refused by another.
    cursor = client.get(f"/events/{event.event_id}/log/", {"limit": 1}).context["next_url"].split("cursor=")[1]
    moved = client.get(f"/events/{event.event_id}/log/", {"limit": 1, "cursor": cursor, "action": "event_edited"})
    assert moved.status_code == 400


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("field", ["actor", "action", "cursor", "limit"])
def test_hostile_filters_are_refused_readably(moto_ddb, team, field, value):
    event = make_event(capacity=40, team="chem")
    client = logged_in(team["ada"])
    for url in (f"/events/{event.event_id}/log/", "/teams/chem/log/", "/teams/chem/log/?section=team"):
        answer = client.get(url, {field: value, "page": value})
        assert answer.status_code in (200, 400), (url, answer.status_code)
        if answer.status_code == 400:
            assert answer.context["error"]


def test_the_team_log_shows_its_events_and_its_own_changes(moto_ddb, team):
    client = logged_in(team["ada"])
    bea = User.objects.create_user("bea", password="pw", first_name="Bea")
    assert client.post("/teams/chem/members/", {"username": "bea", "role": EVENT_MANAGER}).status_code == 302
    member = Membership.objects.get(user=bea)
    assert client.post(f"/teams/chem/members/{member.pk}/role/", {f"m{member.pk}-role": VIEWER}).status_code == 302
    assert client.post(f"/teams/chem/members/{member.pk}/remove/").status_code == 302
    own = client.get("/teams/chem/log/", {"section": "team"}).content.decode()
    assert "added Bea as event manager" in own and "made Bea viewer (was event manager)" in own
    assert "removed Bea from the team" in own
    assert set(TeamAuditEntry.objects.values_list("actor", flat=True)) == {user_key(team["ada"])}
    event = make_event(capacity=40, team="chem")
    put_entries(event.event_id, Actor(user_id=user_key(team["mia"]), roles={"chem": EVENT_MANAGER}), 1)
    assert "raised the capacity from 40 to 41" in client.get("/teams/chem/log/").content.decode()
    # Only the team's admins.
    assert logged_in(team["mia"]).get("/teams/chem/log/").status_code == 403


def test_a_refused_membership_change_writes_no_row(moto_ddb, team):
    client = logged_in(team["ada"])
    admin = Membership.objects.get(user=team["ada"])
    # The last admin cannot be demoted: refused, and nothing in the log.
    assert client.post(f"/teams/chem/members/{admin.pk}/role/", {f"m{admin.pk}-role": VIEWER}).status_code == 409
    assert not TeamAuditEntry.objects.exists()


@pytest.mark.parametrize("value", [*HOSTILE, "29", "3651", "1e3", "365.5"])
def test_hostile_retention_is_refused_readably(moto_ddb, team, value):
    answer = logged_in(team["ada"]).post("/teams/chem/retention/", {"days": value})
    assert answer.status_code == 400
    assert answer.context["retention_form"].errors["days"]
    assert Team.objects.get(pk="chem").audit_retention_days == 365 and not TeamAuditEntry.objects.exists()


def test_the_retention_is_only_posted(moto_ddb, team):
    assert logged_in(team["ada"]).get("/teams/chem/retention/").status_code == 405


def test_a_retention_applies_to_the_entries_written_from_then_on(moto_ddb, team):
    assert logged_in(team["ada"]).post("/teams/chem/retention/", {"days": "90"}).status_code == 302
    (row,) = TeamAuditEntry.objects.all()
    assert (row.action, row.before, row.after) == ("retention_changed", {"days": 365}, {"days": 90})
    event = make_event(capacity=40, team="chem")
    put_entries(event.event_id, Actor(user_id=user_key(team["mia"]), roles={"chem": EVENT_MANAGER}), 1)
    (entry,) = AuditEntry.query(AuditEntry.pk_for_event(event.event_id))
    assert round((entry.expires_at - entry.at).total_seconds() / 86400) == 90


def test_the_team_log_rows_past_the_retention_are_swept(moto_ddb, team):
    from tems.teams.services import team_audit_sweep

    assert logged_in(team["ada"]).post("/teams/chem/retention/", {"days": "30"}).status_code == 302
    (row,) = TeamAuditEntry.objects.all()
    assert team_audit_sweep(now=row.at + timedelta(days=29)) == 0
    assert team_audit_sweep(now=row.at + timedelta(days=31)) == 1 and not TeamAuditEntry.objects.exists()
