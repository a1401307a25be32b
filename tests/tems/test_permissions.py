"""Every route declares its permission in tems.permissions.ROUTES: the walker over the URL patterns, what an
undeclared route gets at run time, and the decision's cheap path (no object read for a person without roles)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, include, path

from tems import permissions
from tems.models import DoorAssignment, Membership, Team
from tems.permissions import (
    DOOR_VOLUNTEER,
    EVENT_DOOR,
    EVENT_MANAGE,
    EVENT_MANAGER,
    INVENTORY_ITEM,
    Decision,
    decide,
    rule_for,
)


def url_names(resolver: URLResolver | None = None, namespace: str = "") -> list[str]:
    """The URL name of every pattern the URLconf routes to ("namespace:name"), nameless ones as their route."""
    names = []
    for pattern in (resolver or get_resolver()).url_patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            names.extend(url_names(pattern, inner))
        elif isinstance(pattern, URLPattern):
            names.append(f"{namespace}{pattern.name}" if pattern.name else f"{namespace}<unnamed>")
    return names


def undeclared_routes() -> list[str]:
    return sorted(name for name in url_names() if rule_for(name) is None)


def test_every_route_declares_its_permission():
    assert undeclared_routes() == []


def test_no_declaration_names_a_route_that_is_gone():
    names = set(url_names())
    namespaces = {name.rpartition(":")[0] for name in names}
    stale = [name for name in permissions.ROUTES
             if name[:-2] not in namespaces if name.endswith(":*")] + [
        name for name in permissions.ROUTES if not name.endswith(":*") and name not in names]
    assert stale == []


def _secret_page(request, event_id):
    return HttpResponse("staff only")


# A URLconf like the project's with one route more, that nobody declared.
urlpatterns = [
    path("", include("tems.urls")),
    path("events/<id:event_id>/secret/", _secret_page, name="undeclared_secret"),
]


@override_settings(ROOT_URLCONF=__name__)
def test_the_walker_flags_a_route_added_without_a_declaration():
    assert undeclared_routes() == ["undeclared_secret"]


@pytest.mark.django_db
@override_settings(ROOT_URLCONF=__name__)
def test_an_undeclared_route_is_open_to_platform_admins_only(moto_ddb):
    team = Team.objects.create(id="chem", name="Chemistry")
    manager = User.objects.create_user("manager", password="pw")
    Membership.objects.create(user=manager, team=team, role=EVENT_MANAGER)
    admin = User.objects.create_user("admin", password="pw", is_staff=True)
    clients = {}
    for user in (manager, admin):
        clients[user.username] = Client()
        clients[user.username].force_login(user)
    assert clients["manager"].get("/events/e1/secret/").status_code == 403
    assert clients["admin"].get("/events/e1/secret/").status_code == 200
    assert Client().get("/events/e1/secret/").status_code == 302  # to the log-in page


def test_a_method_rule_falls_back_to_its_star_entry():
    assert permissions.permission_for("registrations:api_event_questions", "PUT") is EVENT_MANAGE
    assert permissions.permission_for("registrations:api_event_questions", "GET") is permissions.LOGGED_IN
    assert permissions.permission_for("lab:costs", "POST") is permissions.LAB
    assert permissions.permission_for("nobody:declared", "GET") is permissions.UNDECLARED


@pytest.mark.django_db
def test_a_student_is_refused_without_any_object_being_read(monkeypatch):
    student = User.objects.create_user("student", password="pw")
    monkeypatch.setattr(permissions, "object_team", lambda *args: pytest.fail("read an object for a student"))
    assert decide(student, EVENT_MANAGE, {"event_id": "e1"}) is Decision.FORBID
    assert decide(student, INVENTORY_ITEM, {"sku": "X"}) is Decision.FORBID


@pytest.mark.django_db
def test_a_door_volunteer_holds_the_door_only_where_assigned(monkeypatch):
    team = Team.objects.create(id="chem", name="Chemistry")
    volunteer = User.objects.create_user("door", password="pw")
    membership = Membership.objects.create(user=volunteer, team=team, role=DOOR_VOLUNTEER)
    DoorAssignment.objects.create(membership=membership, event_id="a")
    monkeypatch.setattr(permissions, "object_team", lambda scope, object_id: "chem")
    assert decide(volunteer, EVENT_DOOR, {"event_id": "a"}) is Decision.ALLOW
    assert decide(User.objects.get(pk=volunteer.pk), EVENT_DOOR, {"event_id": "b"}) is Decision.FORBID
    assert decide(volunteer, EVENT_MANAGE, {"event_id": "a"}) is Decision.FORBID


@pytest.mark.django_db
def test_another_teams_hidden_object_is_not_found_and_an_unknown_one_too(monkeypatch):
    team = Team.objects.create(id="chem", name="Chemistry")
    keeper = User.objects.create_user("keeper", password="pw")
    Membership.objects.create(user=keeper, team=team, role=permissions.INVENTORY_KEEPER)
    monkeypatch.setattr(permissions, "object_team", lambda scope, object_id: "physics")
    assert decide(keeper, INVENTORY_ITEM, {"sku": "X"}) is Decision.NOT_FOUND

    def unknown(scope, object_id):
        raise permissions.NoSuchObject(object_id)

    monkeypatch.setattr(permissions, "object_team", unknown)
    assert decide(keeper, INVENTORY_ITEM, {"sku": "X"}) is Decision.NOT_FOUND


@pytest.mark.django_db
def test_roles_are_read_once_per_request(django_assert_num_queries):
    team = Team.objects.create(id="chem", name="Chemistry")
    manager = User.objects.create_user("manager", password="pw")
    Membership.objects.create(user=manager, team=team, role=EVENT_MANAGER)
    with django_assert_num_queries(1):  # no door volunteer: the door assignments are not asked for
        for _ in range(3):
            permissions.access_of(manager)
