"""The pages and the API of a person's data and of an event's answer retention: thin views, readable messages
on pages, problem+json on the API, never a 5xx for hostile input."""

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from registrations.privacy.selectors import retention_get
from tests.helpers import assert_problem
from tests.registrations.helpers import make_event
from tests.registrations.privacy.helpers import full_event_with_waiting, person, status_of

pytestmark = pytest.mark.django_db(transaction=True)


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_download_is_the_export_of_the_caller(ddb):
    alice = person("alice", "alice@uni.test")
    full_event_with_waiting(alice)
    page = _client(alice).get("/me/data/")
    assert page.status_code == 200 and "Download my data" in page.content.decode()

    response = _client(alice).get("/me/data/tems-my-data.json")

    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    body = json.loads(response.content)
    # One entry for the one registration, however many copies of it the table keeps.
    assert body["account"]["username"] == "alice"
    assert [entry["status"] for entry in body["registrations"]] == ["confirmed"]
    assert _client(alice).get("/api/me/data").json()["registrations"] == body["registrations"]
    assert_problem(Client().get("/api/me/data"), 401)


def test_erasing_from_the_page_asks_for_the_username_then_erases_and_logs_out(ddb):
    alice, bob = person("alice", "alice@uni.test"), person("bob", "bob@uni.test")
    event, _ = full_event_with_waiting(alice, bob)
    client = _client(alice)

    wrong = client.post("/me/data/erase/", {"confirm": "bob"})
    assert wrong.status_code == 400 and "not your username" in wrong.content.decode()
    assert User.objects.filter(username="alice").exists()

    done = client.post("/me/data/erase/", {"confirm": "alice"})

    assert done.status_code == 200 and "Your account is erased" in done.content.decode()
    assert not User.objects.filter(username="alice").exists()
    assert status_of(event.event_id, bob) == "confirmed"
    assert client.get("/me/data/")["Location"].startswith("/accounts/login/")


def test_erasing_through_the_api(ddb):
    alice = person("alice", "alice@uni.test")
    full_event_with_waiting(alice)
    client = _client(alice)
    response = client.post("/api/me/erase", {"confirm": "alice"}, content_type="application/json")
    assert response.status_code == 200 and response.json() == {"status": "erased", "cancelled": 1}
    assert_problem(client.post("/api/me/erase", {"confirm": "alice"}, content_type="application/json"), 401)


@pytest.mark.parametrize("body", [
    {}, {"confirm": None}, {"confirm": 7}, {"confirm": ["alice"]}, {"confirm": {"$ne": ""}},
    {"confirm": "alice\u0000"}, {"confirm": "x" * 10_000}, {"confirm": "ALICE"}, {"confirm": " alice"},
])
def test_hostile_erase_requests_are_problems_and_erase_nothing(ddb, body):
    alice = person("alice", "alice@uni.test")
    response = _client(alice).post("/api/me/erase", json.dumps(body), content_type="application/json")
    assert_problem(response, 400)
    assert User.objects.get(username="alice").is_active


def test_erase_bodies_that_are_not_json_objects_are_problems(ddb):
    alice = person("alice", "alice@uni.test")
    client = _client(alice)
    assert_problem(client.post("/api/me/erase", "[1]", content_type="application/json"), 400)
    assert_problem(client.post("/api/me/erase", "{", content_type="application/json"), 400)
    assert_problem(client.post("/api/me/erase", "confirm=alice", content_type="text/plain"), 415)
    assert_problem(client.get("/api/me/erase"), 405)
    assert User.objects.get(username="alice").is_active


def test_a_staff_account_is_refused_on_the_api_and_the_page(ddb, staff_user, staff_client):
    assert_problem(staff_client.post("/api/me/erase", {"confirm": "staffer"}, content_type="application/json"), 403)
    page = staff_client.post("/me/data/erase/", {"confirm": "staffer"})
    assert page.status_code == 403 and "administrator" in page.content.decode()
    staff_user.refresh_from_db()
    assert staff_user.is_active


def test_staff_set_an_events_retention_on_its_page(ddb, staff_client, student_client):
    event = make_event()
    url = f"/events/{event.event_id}/retention/"
    assert staff_client.get(url).status_code == 200
    assert student_client.get(url).status_code == 403

    saved = staff_client.post(url, {"days": "30", "version": ""})
    assert saved.status_code == 302 and int(retention_get(event_id=event.event_id).days) == 30
    stale = staff_client.post(url, {"days": "10", "version": ""}, follow=True)
    assert "changed this event" in stale.content.decode() and int(retention_get(event_id=event.event_id).days) == 30
    for bad in ("-1", "3651", "ten", "1e3", "9" * 400):
        response = staff_client.post(url, {"days": bad, "version": "1"})
        assert response.status_code == 400, bad
    assert staff_client.get("/events/nosuchevent1/retention/").status_code == 404


@pytest.mark.parametrize("body, status", [
    ({"days": 14, "version": None}, 200), ({"days": -3}, 400), ({"days": "14"}, 400), ({"days": 1.5}, 400),
    ({"days": True}, 400), ({"days": 10**30}, 400), ({"days": 14, "version": "x"}, 400),
    ({"days": 14, "version": 0}, 400), ({"days": [14]}, 400),
])
def test_the_retention_api_takes_only_whole_days(ddb, staff_client, body, status):
    event = make_event()
    response = staff_client.put(f"/api/events/{event.event_id}/retention", json.dumps(body),
                                content_type="application/json")
    if status == 200:
        assert response.status_code == 200 and response.json()["days"] == 14 and response.json()["version"] == 1
    else:
        assert_problem(response, status)
        assert retention_get(event_id=event.event_id) is None


def test_the_retention_api_is_for_staff_and_versioned(ddb, staff_client, student_client):
    event = make_event()
    url = f"/api/events/{event.event_id}/retention"
    assert_problem(student_client.get(url), 403)
    assert staff_client.get(url).json()["days"] is None
    staff_client.put(url, {"days": 7}, content_type="application/json")
    assert_problem(staff_client.put(url, {"days": 8}, content_type="application/json"), 409)
    assert staff_client.put(url, {"days": None, "version": 1}, content_type="application/json").json()["days"] is None
    assert_problem(staff_client.get("/api/events/nosuchevent1/retention"), 404)
