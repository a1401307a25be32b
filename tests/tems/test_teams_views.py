"""Team pages: a platform admin creates a team and names its admins, a team admin manages members and roles and
assigns door volunteers to events; events and items are created for one of the creator's teams and show their
organizer. Hostile input on every new field is a 400 with a readable message, never a 5xx. On moto: no race here."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client

from inventory import selectors as inventory_selectors
from registrations import selectors
from tems.models import DoorAssignment, Membership, Team
from tems.permissions import DOOR_VOLUNTEER, EVENT_MANAGER, INVENTORY_KEEPER, TEAM_ADMIN, VIEWER
from tests.helpers import assert_problem
from tests.registrations.helpers import make_event

# A form post cannot carry a lone surrogate (it is not UTF-8); JSON can, and the API's cases add it.
HOSTILE = ["", " ", "x" * 5000, "a\x00b", "\u202eevil", "<script>alert(1)</script>", "'; DROP TABLE teams; --",
           "../../etc/passwd"]


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def people(db):
    return {name: User.objects.create_user(name, password="pw", is_staff=name == "root")
            for name in ("root", "ada", "bea", "cyd")}


@pytest.fixture
def team(people):
    team = Team.objects.create(id="chem", name="Chemistry Society")
    Membership.objects.create(user=people["ada"], team=team, role=TEAM_ADMIN)
    return team


def test_a_platform_admin_creates_a_team_and_names_its_admins(people, moto_ddb):
    client = logged_in(people["root"])
    response = client.post("/teams/new/", {"name": "Physics Department", "id": "phys", "admins": "ada, bea"})
    assert response.status_code == 302 and response["Location"] == "/teams/phys/"
    assert set(Membership.objects.filter(team_id="phys").values_list("user__username", "role")) == {
        ("ada", TEAM_ADMIN), ("bea", TEAM_ADMIN)}
    assert "Physics Department" in logged_in(people["ada"]).get("/teams/").content.decode()
    # Only a platform admin may.
    assert logged_in(people["ada"]).post("/teams/new/", {"name": "X", "id": "x", "admins": "ada"}).status_code == 403


def test_a_team_admin_adds_members_changes_roles_and_removes_them(people, team, moto_ddb):
    client = logged_in(people["ada"])
    assert client.post("/teams/chem/members/", {"username": "bea", "role": EVENT_MANAGER}).status_code == 302
    bea = Membership.objects.get(user=people["bea"])
    assert client.post(f"/teams/chem/members/{bea.pk}/role/", {f"m{bea.pk}-role": VIEWER}).status_code == 302
    assert Membership.objects.get(pk=bea.pk).role == VIEWER
    page = client.get("/teams/chem/").content.decode()
    assert "bea" in page and "Viewer" in page
    # The tab's title is the team's name, and the log's settings are said once, in the page's body.
    assert re.search(r"<title>[^<]*</title>", page) and page.count('id="retention-title"') == 1
    assert client.post(f"/teams/chem/members/{bea.pk}/remove/").status_code == 302
    assert not Membership.objects.filter(pk=bea.pk).exists()
    # Adding someone twice, or an account that does not exist, is a message, not an error page.
    assert client.post("/teams/chem/members/", {"username": "ada", "role": VIEWER}).status_code == 400
    assert "No account is called nobody" in client.post(
        "/teams/chem/members/", {"username": "nobody", "role": VIEWER}).content.decode()


def test_a_team_keeps_at_least_one_admin(people, team, moto_ddb):
    client = logged_in(people["ada"])
    ada = Membership.objects.get(user=people["ada"])
    response = client.post(f"/teams/chem/members/{ada.pk}/role/", {f"m{ada.pk}-role": VIEWER})
    assert response.status_code == 409 and "at least one team admin" in response.content.decode()
    assert client.post(f"/teams/chem/members/{ada.pk}/remove/").status_code == 409
    assert Membership.objects.get(pk=ada.pk).role == TEAM_ADMIN


def test_a_team_admin_assigns_door_volunteers_to_the_teams_event(people, team, moto_ddb):
    volunteer = Membership.objects.create(user=people["cyd"], team=team, role=DOOR_VOLUNTEER)
    event = make_event(team="chem")
    client = logged_in(people["ada"])
    page = client.get(f"/events/{event.event_id}/doors/")
    assert page.status_code == 200 and "cyd" in page.content.decode()
    assert client.post(f"/events/{event.event_id}/doors/", {"volunteers": [volunteer.pk]}).status_code == 302
    assert DoorAssignment.objects.filter(membership=volunteer, event_id=event.event_id).exists()
    assert logged_in(people["cyd"]).get(f"/events/{event.event_id}/door/").status_code == 200
    assert client.post(f"/events/{event.event_id}/doors/", {}).status_code == 302  # nobody ticked: unassigned
    assert not DoorAssignment.objects.filter(membership=volunteer).exists()
    # Changing the volunteer's role takes their doors with it.
    DoorAssignment.objects.create(membership=volunteer, event_id=event.event_id)
    client.post(f"/teams/chem/members/{volunteer.pk}/role/", {f"m{volunteer.pk}-role": VIEWER})
    assert not DoorAssignment.objects.filter(membership=volunteer).exists()


def test_an_event_is_created_for_one_of_the_creators_teams_and_shows_its_organizer(people, team, moto_ddb):
    Membership.objects.create(user=people["bea"], team=team, role=EVENT_MANAGER)
    Team.objects.create(id="phys", name="Physics Department")
    client = logged_in(people["bea"])
    body = {"title": "Spectra night", "starts_at": "2030-01-01T18:00:00Z", "capacity": 10}

    def create(extra):
        return client.post("/api/events", data=json.dumps({**body, **extra}), content_type="application/json",
                           HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))

    # One team: it need not be named.
    created = create({})
    assert created.status_code == 201, created.content
    assert created.json()["team"] == {"id": "chem", "name": "Chemistry Society"}
    event_id = created.json()["id"]
    assert selectors.event_get(event_id=event_id).team == "chem"
    # Another team's id is refused, named: the form keeps to the creator's teams.
    refused = assert_problem(create({"team": "phys"}), 400)
    assert "team" in refused["errors"]
    # Every reader sees the organizer, on the API and the pages.
    student = logged_in(people["cyd"])
    assert student.get(f"/api/events/{event_id}").json()["team"]["name"] == "Chemistry Society"
    assert "Chemistry Society" in student.get(f"/events/{event_id}/").content.decode()
    assert "Chemistry Society" in student.get("/events/").content.decode()
    # A search's cards name it as the list's do (the cards are built by one selector).
    assert "By Chemistry Society" in student.get("/events/?q=spectra").content.decode()
    # The page's form offers the creator's teams only.
    form = client.get("/events/new/").content.decode()
    assert "Chemistry Society" in form and "Physics Department" not in form


def test_an_item_is_kept_by_the_creators_team_and_other_teams_do_not_see_it(people, team, moto_ddb):
    Membership.objects.create(user=people["bea"], team=team, role=INVENTORY_KEEPER)
    other = Team.objects.create(id="phys", name="Physics Department")
    Membership.objects.create(user=people["cyd"], team=other, role=INVENTORY_KEEPER)
    bea, cyd = logged_in(people["bea"]), logged_in(people["cyd"])
    response = bea.post("/api/inventory", data=json.dumps({"sku": "FLASK", "name": "Flask", "quantity": 3}),
                        content_type="application/json")
    assert response.status_code == 201, response.content
    assert inventory_selectors.item_get(sku="FLASK").team == "chem"
    assert [item["sku"] for item in bea.get("/api/inventory").json()["items"]] == ["FLASK"]
    assert cyd.get("/api/inventory").json()["items"] == []
    assert_problem(cyd.get("/api/inventory/FLASK"), 404)
    assert cyd.get("/inventory/FLASK/").status_code == 404
    # A stock count of another team's item is refused as if the item did not exist.
    counted = cyd.post("/inventory/import/", {"csv_text": "FLASK,9", "reason": "count"})
    assert counted.status_code == 400 and "no inventory item" in counted.content.decode()
    assert inventory_selectors.item_get(sku="FLASK").quantity == 3


# --- hostile input on every new field ------------------------------------------------------------------------------

@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("field", ["name", "id", "admins"])
def test_hostile_team_fields_are_refused_readably(people, moto_ddb, field, value):
    data = {"name": "Geology Club", "id": "geo", "admins": "ada", field: value}
    response = logged_in(people["root"]).post("/teams/new/", data)
    assert response.status_code in (302, 400)
    if response.status_code == 400:
        assert 'class="field-error"' in response.content.decode()
    else:  # harmless after cleaning (the name's script tag is text, shown escaped)
        assert Team.objects.filter(pk="geo").exists()


def test_a_team_form_of_bytes_that_are_not_utf8_is_refused_readably(people, moto_ddb):
    response = logged_in(people["root"]).post("/teams/new/", data="name=%FF%FE&id=%C0%AF&admins=%ED%A0%80",
                                              content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400 and 'class="field-error"' in response.content.decode()


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("field", ["username", "role"])
def test_hostile_member_fields_are_refused_readably(people, team, moto_ddb, field, value):
    response = logged_in(people["ada"]).post("/teams/chem/members/", {"username": "bea", "role": VIEWER,
                                                                     field: value})
    assert response.status_code == 400
    assert 'class="field-error"' in response.content.decode()


@pytest.mark.parametrize("value", [*HOSTILE, "99999999999999999999999"])
def test_hostile_roles_and_door_choices_are_refused_readably(people, team, moto_ddb, value):
    client = logged_in(people["ada"])
    ada = Membership.objects.get(user=people["ada"])
    response = client.post(f"/teams/chem/members/{ada.pk}/role/", {f"m{ada.pk}-role": value})
    assert response.status_code == 400 and "Choose one of the roles" in response.content.decode()
    event = make_event(team="chem")
    response = client.post(f"/events/{event.event_id}/doors/", {"volunteers": [value]})
    assert response.status_code == 400


@pytest.mark.parametrize("value", [*HOSTILE, "\ud800", 7, ["chem"], {"id": "chem"}, True])
def test_hostile_team_choice_on_create_is_a_400_problem(people, team, moto_ddb, value):
    Team.objects.create(id="phys", name="Physics Department")
    Membership.objects.create(user=people["bea"], team=team, role=EVENT_MANAGER)
    Membership.objects.create(user=people["bea"], team_id="phys", role=INVENTORY_KEEPER)
    Membership.objects.create(user=people["bea"], team=Team.objects.create(id="bio", name="Biology"),
                              role=EVENT_MANAGER)
    client = logged_in(people["bea"])
    body = {"title": "T", "starts_at": "2030-01-01T18:00:00Z", "capacity": 10, "team": value}
    response = client.post("/api/events", data=json.dumps(body), content_type="application/json",
                           HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    if value in ("", " "):
        # Left empty by someone with two teams: they must say which.
        assert "team" in assert_problem(response, 400)["errors"]
    else:
        assert_problem(response, 400)
    item = client.post("/api/inventory", data=json.dumps({"sku": "S1", "name": "n", "team": value}),
                       content_type="application/json")
    assert item.status_code in (201, 400)  # their one keeping team stands in for an empty choice
    if item.status_code == 201:
        assert value in ("", " ") and item.json()["team"] == "phys"
