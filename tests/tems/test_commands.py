"""Management commands: ensure_table, seed_demo and check_invariants are safe to run again and again."""

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from inventory import selectors as inventory_selectors
from registrations import selectors
from registrations.seating import shards
from registrations.seating.models import SeatShard
from tems.accounts import email_address_verified
from tems.dynamo import TABLE_SCHEMA, boto3_client, ensure_table
from tems.models import DoorAssignment, EmailAddress, Membership, Team
from tems.permissions import ROLES


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_ensure_table_twice_creates_then_changes_nothing(dynamodb_local_endpoint):
    from tems.dynamo import TableConfig, configure_models
    from tests.helpers import REGION

    config = TableConfig("tems_ensure_twice", dynamodb_local_endpoint, REGION)
    configure_models(config)
    try:
        first = ensure_table()
        assert "created table tems_ensure_twice" in first
        description = boto3_client().describe_table(TableName=config.table_name)["Table"]
        assert [i["IndexName"] for i in description["GlobalSecondaryIndexes"]] == ["GSI1"]
        assert description["KeySchema"] == TABLE_SCHEMA["KeySchema"]
        assert run("ensure_table").strip() == "table tems_ensure_twice is up to date"
        assert ensure_table() == []
    finally:
        boto3_client().delete_table(TableName=config.table_name)
        configure_models(TableConfig.from_settings())


@pytest.fixture
def demo_mode(settings):
    settings.TEMS_DEMO = True
    # The commands' own behaviour, on the shortest term (tests/registrations/test_demo.py checks the full one).
    settings.TEMS_DEMO_TERM_EVENTS = 21


@pytest.mark.django_db
def test_seed_demo_twice_makes_verified_accounts_and_teams_once_then_check_invariants_catches_drift(ddb, demo_mode):
    # One seeded term for all three claims: seeding it is most of this module's time.
    first = run("seed_demo")
    # The term's 21 events and the society's draft waiting for approval.
    assert "created 16 demo account(s), 2 team(s), 22 demo event(s), 5 inventory item(s)" in first
    assert "staff" in first and "alice" in first and "cs-door (door volunteer)" in first
    assert all(email_address_verified(user=user) for user in User.objects.all())  # created verified
    # An account from a .data/ made before verification (no address record): the next run verifies it.
    EmailAddress.objects.filter(user__username="alice").delete()
    assert not email_address_verified(user=User.objects.get(username="alice"))
    second = run("seed_demo")
    assert "created 0 demo account(s), 0 team(s), 0 demo event(s), 0 inventory item(s)" in second
    assert User.objects.count() == 16
    assert all(email_address_verified(user=user) for user in User.objects.all())
    upcoming, past = selectors.event_list()
    assert len(upcoming) + len(past) == 21
    assert [item.sku for item in inventory_selectors.item_list()] == [
        "BADGE-BLANK", "LABKIT-PY", "LANYARD", "TSHIRT-L", "TSHIRT-M"]
    # Two teams, a member in each role once (the second run added none), and an organizer for every event.
    for team_id in ("compsoc", "union"):
        assert sorted(Membership.objects.filter(team_id=team_id).values_list("role", flat=True)) == sorted(ROLES)
    teams = {event.event_id: event.team for event in upcoming}
    assert {event_id: teams[event_id] for event_id in ("welcome-fair", "python-workshop", "career-talk",
                                                       "robotics-demo")} == {
        "welcome-fair": "union", "python-workshop": "compsoc", "career-talk": "compsoc", "robotics-demo": "union"}
    assert set(teams.values()) == {"union", "compsoc"}
    assert set(DoorAssignment.objects.values_list("membership__user__username", "event_id")) == {
        ("cs-door", "python-workshop"), ("su-door", "welcome-fair")}
    assert {item.sku: item.team for item in inventory_selectors.item_list()}["LABKIT-PY"] == "compsoc"
    # The society's events need the union's approval, and one draft waits for it.
    assert Team.objects.filter(pk="compsoc", needs_approval=True, overseen_by="union").exists()
    assert selectors.event_get(event_id="winter-hackathon").is_draft

    assert "BROKEN" not in run("check_invariants")
    confirmed = shards.event_seat_counts("welcome-fair").registered  # the demo's registrations
    # A counter moved without a registration item is exactly the drift the check exists to catch.
    SeatShard(*SeatShard.key_for("welcome-fair", 0)).update(actions=[SeatShard.taken.add(1)])
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("check_invariants", stdout=out)
    assert caught.value.returncode == 1
    assert f"EVENT#welcome-fair: {confirmed + 1} seats taken but {confirmed} confirmed" in out.getvalue()


@pytest.mark.django_db
def test_seed_demo_refuses_outside_demo_mode(settings):
    settings.TEMS_DEMO = False
    with pytest.raises(CommandError, match="runs only in demo mode: set TEMS_DEMO=1"):
        run("seed_demo")
    assert not User.objects.exists()
