"""Role × route: each role gets exactly the answer this table says on every staff route, pages and API.

One team (alpha) has a member in each role; its door volunteer works the door of event A only. A role the table
allows gets the same status as a platform admin making the same request (the view's own answer: 200, or 400 for
the deliberately empty bodies of the writes, so nothing is changed); any other role is refused: a page with 403,
the API with a 403 problem; 404 where the object is one only its team may know of (another team's item or team).
Anonymous visitors are sent to log in (pages) or get 401 (API). The same requests about team beta's objects are
refused to every alpha role. The table is written out here, apart from tems.permissions.ROUTES, so a change of
either is seen.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import URLResolver, get_resolver, reverse

from inventory import services as inventory_services
from tems import permissions
from tems.dynamo import boto3_client, current_config
from tems.models import DoorAssignment, Membership, Team
from tests.registrations.helpers import make_event, register
from tests.tems.test_permissions import url_names

TEAM_ROLES = ("team_admin", "event_manager", "door_volunteer", "inventory_keeper", "viewer")
ROLES = ("platform_admin", *TEAM_ROLES, "student", "anonymous")

MANAGERS = {"team_admin", "event_manager"}
DOOR = MANAGERS | {"door_volunteer"}
KEEPERS = {"team_admin", "inventory_keeper"}


@dataclass(frozen=True)
class Case:
    route: str
    method: str
    allowed: frozenset[str]  # the alpha roles allowed (a platform admin always is)
    # Another team's object: "forbid" (events: public anyway) or "hide" (404); None: the route names no object.
    other: str | None = "forbid"
    # Whether a platform admin's request is made (not for the lab's races).
    admin_runs: bool = True


def case(route, method, allowed, other="forbid", admin_runs=True):
    return Case(route, method, frozenset(allowed), other, admin_runs)


MATRIX = [
    case("teams:team_list", "GET", TEAM_ROLES, other=None),
    case("teams:team_create", "POST", (), other=None),
    case("teams:team_detail", "GET", {"team_admin"}, other="hide"),
    case("teams:team_approval", "POST", (), other=None),
    case("teams:member_add", "POST", {"team_admin"}, other="hide"),
    case("teams:member_role", "POST", {"team_admin"}, other="hide"),
    case("teams:member_remove", "POST", {"team_admin"}, other="hide"),
    case("teams:team_log", "GET", {"team_admin"}, other="hide"),
    case("teams:team_retention", "POST", {"team_admin"}, other="hide"),
    case("registrations:event_create", "GET", MANAGERS, other=None),
    case("registrations:event_edit", "GET", MANAGERS),
    case("registrations:event_copy", "GET", MANAGERS),
    case("registrations:event_report", "GET", MANAGERS | {"viewer"}),
    case("registrations:event_report_csv", "GET", MANAGERS | {"viewer"}),
    case("registrations:event_message_progress", "GET", MANAGERS),
    case("registrations:api_event_detail", "PUT", MANAGERS),
    case("registrations:event_doors", "GET", {"team_admin"}),
    case("registrations:event_log", "GET", MANAGERS),
    case("registrations:attendee_list", "GET", MANAGERS),
    case("registrations:event_messages", "GET", MANAGERS),
    case("registrations:event_cancel", "GET", MANAGERS),
    case("registrations:event_questions", "GET", MANAGERS),
    case("registrations:attendee_export", "GET", MANAGERS),
    case("registrations:api_events", "POST", MANAGERS, other=None),
    case("registrations:api_attendee_list", "GET", MANAGERS),
    case("registrations:api_event_questions", "PUT", MANAGERS),
    case("registrations:api_event_messages", "GET", MANAGERS),
    case("registrations:api_event_messages", "POST", MANAGERS),
    case("registrations:api_event_cancel", "POST", MANAGERS),
    case("registrations:api_message_detail", "GET", MANAGERS),
    # The drafts of a team alpha oversees (gamma); beta's object is a draft of a team beta oversees. A post without
    # its idempotency key is refused (400) before anything is written.
    case("registrations:approval_list", "GET", MANAGERS, other=None),
    case("registrations:event_publish", "POST", MANAGERS, other="hide"),
    case("registrations:event_send_back", "POST", MANAGERS, other="hide"),
    case("registrations:api_event_publish", "POST", MANAGERS, other="hide"),
    case("checkins:door", "GET", DOOR),
    case("checkins:api_checkin_create", "POST", DOOR),
    case("checkins:api_checkin_stats", "GET", DOOR | {"viewer"}),
    case("checkins:api_checkin_undo", "DELETE", DOOR),
    case("checkins:api_door_answers", "GET", DOOR),
    case("checkins:api_door_search", "GET", DOOR),
    case("checkins:api_door_list", "GET", DOOR),
    case("privacy:event_retention", "GET", MANAGERS),
    case("privacy:api_event_retention", "GET", MANAGERS),
    case("inventory:item_list", "GET", KEEPERS, other=None),
    case("inventory:item_create", "GET", KEEPERS, other=None),
    case("inventory:stock_import", "GET", KEEPERS, other=None),
    case("inventory:metrics", "GET", (), other=None),
    case("inventory:metrics_moved", "GET", (), other=None),
    case("inventory:item_detail", "GET", KEEPERS, other="hide"),
    case("inventory:item_edit", "GET", KEEPERS, other="hide"),
    case("inventory:item_adjust", "POST", KEEPERS, other="hide"),
    case("inventory:item_history", "GET", KEEPERS, other="hide"),
    case("inventory:api_items", "GET", KEEPERS, other=None),
    case("inventory:api_item_detail", "GET", KEEPERS, other="hide"),
    case("inventory:api_adjustments", "POST", KEEPERS, other="hide"),
    case("inventory:api_history", "GET", KEEPERS, other="hide"),
    case("lab:index", "GET", (), other=None),
    case("lab:tryit", "GET", (), other=None),
    case("lab:registration_race", "POST", (), other=None, admin_runs=False),
    case("lab:lost_update", "POST", (), other=None, admin_runs=False),
    case("lab:costs", "POST", (), other=None, admin_runs=False),
    case("lab:last_seat", "POST", (), other=None, admin_runs=False),
    case("lab:tryit_reset", "POST", (), other=None, admin_runs=False),
    case("lab:api_registration_race", "POST", (), other=None, admin_runs=False),
    case("lab:api_lost_update", "POST", (), other=None, admin_runs=False),
]

NOT_STAFF = {permissions.PUBLIC, permissions.LOGGED_IN, permissions.DJANGO_ADMIN}


def staff_routes() -> set[str]:
    routes = set()
    for name in url_names():
        rule = permissions.rule_for(name)
        rules = rule.values() if isinstance(rule, dict) else [rule]
        if any(permission not in NOT_STAFF for permission in rules):
            routes.add(name)
    return routes


def test_the_matrix_covers_every_staff_route():
    assert {c.route for c in MATRIX} == staff_routes()


@pytest.fixture(scope="module")
def world(module_moto_ddb, django_db_setup, django_db_blocker):
    """One world for the module: the cases only read it (the writes' bodies are empty, so each is refused or
    answered 400 before anything is written), so building it once per case would cost without testing more."""
    with django_db_blocker.unblock():
        alpha = Team.objects.create(id="alpha", name="Alpha Society")
        beta = Team.objects.create(id="beta", name="Beta Department")
        users = {"platform_admin": User.objects.create_user("root", password="pw", is_staff=True),
                 "student": User.objects.create_user("student", password="pw")}
        memberships = {}
        for role in TEAM_ROLES:
            users[role] = User.objects.create_user(role.replace("_", "-"), password="pw")
            memberships[role] = Membership.objects.create(user=users[role], team=alpha, role=role)
        beta_admin = User.objects.create_user("beta-admin", password="pw")
        Membership.objects.create(user=beta_admin, team=beta, role=permissions.TEAM_ADMIN)
        event_a, event_b = make_event(team="alpha"), make_event(team="beta")
        gamma = Team.objects.create(id="gamma", name="Gamma Society", needs_approval=True, overseen_by=alpha)
        delta = Team.objects.create(id="delta", name="Delta Society", needs_approval=True, overseen_by=beta)
        draft_a, draft_b = make_event(team="gamma", draft=True), make_event(team="delta", draft=True)
        DoorAssignment.objects.create(membership=memberships["door_volunteer"], event_id=event_a.event_id)
        registration_a = register(event_a.event_id, "student-key").data["registration_id"]
        registration_b = register(event_b.event_id, "student-key").data["registration_id"]
        for sku, team in (("ITEM-A", "alpha"), ("ITEM-B", "beta")):
            inventory_services.item_create(sku=sku, name=sku, quantity=5, actor="root", team=team)
        clients = {"anonymous": Client()}
        for role, user in users.items():
            clients[role] = Client()
            clients[role].force_login(user)
        objects = {
            "alpha": {"event_id": event_a.event_id, "registration_id": registration_a, "message_id": "m1",
                      "sku": "ITEM-A", "team_id": "alpha", "membership_id": 999999, "draft_id": draft_a.event_id},
            "beta": {"event_id": event_b.event_id, "registration_id": registration_b, "message_id": "m1",
                     "sku": "ITEM-B", "team_id": "beta", "membership_id": 999999, "draft_id": draft_b.event_id},
        }
        yield clients, objects, stored_items()
        # Made outside the tests' transactions, so removed by hand: other modules make users of these names.
        Session.objects.filter(session_key__in=[client.session.session_key for client in clients.values()]).delete()
        User.objects.filter(pk__in=[user.pk for user in [*users.values(), beta_admin]]).delete()
        Team.objects.filter(pk__in=[gamma.pk, delta.pk]).delete()  # first: they name alpha and beta as overseers
        Team.objects.filter(pk__in=[alpha.pk, beta.pk]).delete()


def stored_items() -> dict[tuple[str, str], dict]:
    pages = boto3_client().get_paginator("scan").paginate(TableName=current_config().table_name, ConsistentRead=True)
    return {(item["PK"]["S"], item["SK"]["S"]): item for page in pages for item in page["Items"]}


@pytest.fixture
def world_requests(world, db, settings):
    """The module's world, each case's requests inside its own rolled-back transaction. A case that changed or
    removed an item of the world as it was built would change the next case's, so it fails here; what a case adds
    (the lab's try-it page makes an event of its own) is no object of any case. The world is read once after each
    case, against the items it was built with: a case that finds it as built leaves it so for the next."""
    clients, objects, built = world
    settings.TEMS_DEMO = False  # the lab is then for platform admins only
    yield clients, objects
    after = stored_items()
    assert {key: after.get(key) for key in built} == built, "a case changed the world the module's cases share"


def route_params(resolver: URLResolver | None = None, namespace: str = "") -> dict[str, list[str]]:
    """{URL name: the names of its path arguments} over the whole URLconf."""
    params: dict[str, list[str]] = {}
    for pattern in (resolver or get_resolver()).url_patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            params.update(route_params(pattern, inner))
        elif pattern.name:
            params[f"{namespace}{pattern.name}"] = list(pattern.pattern.converters)
    return params


def url_of(route: str, objects: dict) -> str:
    return reverse(route, kwargs={param: objects[param] for param in route_params()[route]})


def answer(client: Client, method: str, url: str):
    response = getattr(client, method.lower())(url)
    return response.status_code, response


def refused(role: str, *, api: bool, hide: bool) -> int:
    if role == "anonymous":
        return 401 if api else 302
    return 404 if hide else 403


@pytest.mark.parametrize("item", MATRIX, ids=lambda c: f"{c.route}-{c.method}")
def test_each_role_gets_exactly_what_the_table_says(world_requests, item):
    clients, objects = world_requests
    url = url_of(item.route, objects["alpha"])
    api = url.startswith("/api/")
    admin_status = None
    if item.admin_runs:
        admin_status, _ = answer(clients["platform_admin"], item.method, url)
        assert admin_status not in (401, 403), f"platform admin refused at {url}"
    seen, expected = {}, {}
    for role in ROLES[1:]:
        status, response = answer(clients[role], item.method, url)
        seen[role] = status
        if role in item.allowed:
            expected[role] = admin_status
        else:
            expected[role] = refused(role, api=api, hide=False)
            if api and role != "anonymous":
                assert response["Content-Type"] == "application/problem+json"
    assert seen == expected

    if item.other is None:
        return
    other_url = url_of(item.route, objects["beta"])
    seen, expected = {}, {}
    for role in TEAM_ROLES:
        seen[role] = answer(clients[role], item.method, other_url)[0]
        # A role that holds this nowhere is refused before anything is read; one that holds it in alpha is told
        # "not yours" for an event, "nothing here" for what only beta may know of.
        expected[role] = refused(role, api=api, hide=item.other == "hide" and role in item.allowed)
    assert seen == expected
    if item.admin_runs:
        assert answer(clients["platform_admin"], item.method, other_url)[0] == admin_status
