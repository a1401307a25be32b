"""Drafts of a team whose events need approval: unseen by students on every path (list, search, calendar, the
event's page and the API), refused registration by the seat's own condition, published by an approver of the
overseeing team once per tap. On moto: single-threaded; the race of two approvers is test_approval_race.py's."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client

from registrations import selectors
from registrations.approvals import services as approval_services
from registrations.approvals.selectors import drafts_waiting
from registrations.errors import RegistrationError
from registrations.events import selectors as event_selectors
from registrations.events import services as event_services
from registrations.events.selectors import EventFilters
from registrations.seating import shards
from tems.clock import utcnow
from tems.identity import user_key
from tems.models import Membership, Team
from tems.permissions import EVENT_MANAGER, TEAM_ADMIN
from tests.helpers import assert_problem, broken_invariants
from tests.registrations.helpers import register

STARTS = utcnow().replace(microsecond=0) + timedelta(days=10)


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def people(db):
    users = {name: User.objects.create_user(name, password="pw", first_name=name.title())
             for name in ("soc", "ann", "ben", "stu")}
    union = Team.objects.create(id="union", name="Students' Union")
    society = Team.objects.create(id="chess", name="Chess Society", needs_approval=True, overseen_by=union)
    Membership.objects.create(user=users["soc"], team=society, role=EVENT_MANAGER)
    Membership.objects.create(user=users["ann"], team=union, role=EVENT_MANAGER)
    Membership.objects.create(user=users["ben"], team=union, role=TEAM_ADMIN)
    return users


def create(team: str = "chess", title: str = "Blitz tournament", capacity: int = 10, **details) -> dict:
    outcome = event_services.event_create_once(
        user_id="u-soc", idempotency_key=str(uuid.uuid4()), fingerprint=str(uuid.uuid4()), title=title,
        starts_at=STARTS, capacity=capacity, created_by="soc", team=team, team_name="Chess Society",
        **{"category": "social", "public": True, **details})
    return outcome.data


def publish(event_id: str, *, by: str = "Ann", key: str | None = None):
    return approval_services.event_publish_once(event_id=event_id, user_id=f"u-{by}", published_by=by,
                                                idempotency_key=key or str(uuid.uuid4()), fingerprint=f"p-{event_id}")


def listed_ids(**filters) -> set[str]:
    page, _ = event_selectors.event_search(filters=EventFilters(**filters), limit=50)
    return {event.event_id for event in page.items}


def everywhere(event_id: str) -> dict[str, bool]:
    """Whether each path a student finds events by shows the event."""
    month, _, _ = event_selectors.event_month(filters=EventFilters(), year=STARTS.year, month=STARTS.month)
    return {
        "list": event_id in {event.event_id for event in selectors.event_page(limit=50).items},
        "all": event_id in {event.event_id for event in selectors.event_list()[0]},
        "search": event_id in listed_ids(text="blitz"),
        "category": event_id in listed_ids(category="social"),
        "organizer": event_id in listed_ids(organizer="Chess Society"),
        "public": event_id in listed_ids(public_only=True),
        "calendar": event_id in {event.event_id for event in month},
    }


def test_a_draft_is_found_by_no_student_path_until_published(people, moto_ddb):
    body = create(organizer="Chess Society")
    event_id = body["id"]
    assert body["status"] == "draft"
    assert not any(everywhere(event_id).values()), everywhere(event_id)
    assert broken_invariants() == {}
    publish(event_id)
    assert all(everywhere(event_id).values()), everywhere(event_id)
    assert selectors.event_get(event_id=event_id).published_by == "Ann"
    assert broken_invariants() == {}


def test_the_invariant_catches_a_publication_that_leaves_the_shards_marked(people, moto_ddb, monkeypatch):
    monkeypatch.setattr(approval_services.marks, "add_to_lanes", lambda transaction, **_: None)
    event_id = create()["id"]
    publish(event_id)
    (found,) = broken_invariants().values()
    assert any("still carry the draft mark" in problem for problem in found), found


def test_a_draft_refuses_registration_by_the_seat_condition_and_admits_after_publication(people, moto_ddb):
    event_id = create()["id"]
    with pytest.raises(RegistrationError) as refused:
        register(event_id, "student-1")
    assert refused.value.code == "not_found"
    assert shards.event_seat_counts(event_id).registered == 0
    publish(event_id)
    assert register(event_id, "student-1").response.status == 201


def test_an_edit_of_a_draft_that_adds_shards_keeps_every_shard_marked(people, moto_ddb, settings):
    settings.SEATS_PER_SHARD = 5
    event_id = create(capacity=5)["id"]
    stored = selectors.event_get(event_id=event_id)
    event_services.event_update(event_id=event_id, expected_version=int(stored.version), title=stored.title,
                                description="", location="", starts_at=STARTS, capacity=20, updated_by="soc")
    edited = selectors.event_get(event_id=event_id)
    assert edited.is_draft and int(edited.seat_shards) == 4
    assert all(shard.draft for shard in shards.shards_get(event_id=event_id, count=4))
    for n in range(4):
        with pytest.raises(RegistrationError):
            register(event_id, f"student-{n}")
    publish(event_id)
    assert not any(shard.draft for shard in shards.shards_get(event_id=event_id, count=4))
    assert register(event_id, "student-1").response.status == 201


def test_a_team_without_approval_publishes_at_once(people, moto_ddb):
    Team.objects.create(id="maths", name="Maths Department")
    body = create(team="maths")
    assert body["status"] == "published" and everywhere(body["id"])["list"]


def test_publishing_twice_replays_the_first_answer_and_a_second_approver_hears_who(people, moto_ddb):
    event_id = create()["id"]
    first = publish(event_id, key="tap-1")
    again = publish(event_id, key="tap-1")
    assert again.replayed and again.response.body == first.response.body
    with pytest.raises(RegistrationError) as late:
        publish(event_id, by="Ben")
    assert late.value.code == "conflict" and late.value.detail.startswith("Already published by Ann")
    assert late.value.extra["published_by"] == "Ann"


def test_a_cancelled_draft_cannot_be_published(people, moto_ddb):
    event_id = create()["id"]
    event_services.event_cancel_once(event_id=event_id, user_id="u-soc", cancelled_by="soc",
                                     idempotency_key=str(uuid.uuid4()), fingerprint="c")
    with pytest.raises(RegistrationError) as refused:
        publish(event_id)
    assert refused.value.extra.get("reason") == "event_cancelled"


def test_pages_and_api_hide_a_draft_from_students_and_show_it_to_its_teams(people, moto_ddb):
    event_id = create()["id"]
    student = logged_in(people["stu"])
    assert student.get(f"/events/{event_id}/").status_code == 404
    assert_problem(student.get(f"/api/events/{event_id}"), 404)
    assert Client().get(f"/events/{event_id}/").status_code == 404  # public, but a draft
    page = logged_in(people["soc"]).get(f"/events/{event_id}/").content.decode()
    assert "Waiting for approval" in page and "Chess Society" in page
    assert logged_in(people["ann"]).get(f"/events/{event_id}/").status_code == 200
    assert logged_in(people["soc"]).get(f"/api/events/{event_id}").json()["status"] == "draft"


def test_the_approvers_page_lists_the_drafts_waiting_for_them_and_publishes(people, moto_ddb):
    event_id = create()["id"]
    assert [event.event_id for event in drafts_waiting(user=people["ann"])] == [event_id]
    assert drafts_waiting(user=people["soc"]) == []  # the society's own manager approves nothing
    approver = logged_in(people["ann"])
    assert "Blitz tournament" in approver.get("/approvals/").content.decode()
    assert approver.post(f"/approvals/{event_id}/publish/", {"idempotency_key": str(uuid.uuid4())}).status_code == 302
    late = logged_in(people["ben"]).post(f"/approvals/{event_id}/publish/", {"idempotency_key": str(uuid.uuid4())})
    assert late.status_code == 409 and "Already published by Ann" in late.content.decode()
    # Neither the society's manager nor a student may publish: 404, the draft is not theirs to know.
    for name in ("soc", "stu"):
        assert logged_in(people[name]).post(f"/approvals/{event_id}/publish/",
                                            {"idempotency_key": str(uuid.uuid4())}).status_code in (403, 404)


def test_the_api_publishes_once_per_key_and_answers_409_naming_who(people, moto_ddb):
    event_id = create()["id"]
    approver = logged_in(people["ann"])
    key = str(uuid.uuid4())
    first = approver.post(f"/api/drafts/{event_id}/publish", HTTP_IDEMPOTENCY_KEY=key)
    again = approver.post(f"/api/drafts/{event_id}/publish", HTTP_IDEMPOTENCY_KEY=key)
    assert first.status_code == 200 and again.content == first.content
    body = assert_problem(logged_in(people["ben"]).post(f"/api/drafts/{event_id}/publish",
                                                        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4())), 409)
    assert body["published_by"] == "Ann" and "Already published by Ann" in body["detail"]


def test_the_api_shows_the_online_link_to_the_team_and_confirmed_registrants_only(people, moto_ddb):
    Team.objects.create(id="maths", name="Maths Department")
    Membership.objects.create(user=people["soc"], team_id="maths", role=EVENT_MANAGER)
    event_id = create(team="maths", online_url="https://meet.example.org/x")["id"]
    assert logged_in(people["soc"]).get(f"/api/events/{event_id}").json()["online_url"]
    assert "online_url" not in logged_in(people["stu"]).get(f"/api/events/{event_id}").json()
    register(event_id, user_key(people["stu"]))
    assert logged_in(people["stu"]).get(f"/api/events/{event_id}").json()["online_url"]
    assert logged_in(people["ann"]).get(f"/api/events/{event_id}").json()["organizer"] == "Maths Department"


@pytest.mark.parametrize("key", ["", "x" * 5000, "a\x00b", "<script>", "'; DROP TABLE events; --"])
def test_a_hostile_publish_tap_is_a_readable_400_and_publishes_nothing(people, moto_ddb, key):
    event_id = create()["id"]
    approver = logged_in(people["ann"])
    assert_problem(approver.post(f"/api/drafts/{event_id}/publish", HTTP_IDEMPOTENCY_KEY=key), 400)
    page = approver.post(f"/approvals/{event_id}/publish/", {"idempotency_key": key})
    assert page.status_code == 400 and 'role="alert"' in page.content.decode()
    assert selectors.event_get(event_id=event_id).is_draft
    assert approver.post("/approvals/no-such-draft/publish/", {"idempotency_key": str(uuid.uuid4())}
                         ).status_code == 404


def test_a_society_manager_finds_their_waiting_drafts_on_the_drafts_page(people, moto_ddb):
    create(title="Simul night")
    page = logged_in(people["soc"]).get("/approvals/").content.decode()
    assert "Your team's drafts" in page and "Simul night" in page and "/publish/" not in page
    assert ">Drafts</a>" in page  # the menu leads there
    assert ">Drafts</a>" not in logged_in(people["stu"]).get("/events/").content.decode()


def test_an_edit_read_as_a_draft_and_written_after_the_publication_reads_again(people, moto_ddb, settings,
                                                                                monkeypatch):
    """The publication lands between the edit's read and its write: the edit's "still a draft" condition refuses
    it, and its next round adds the new shards unmarked (else they would refuse everyone for good)."""
    settings.SEATS_PER_SHARD = 5
    event_id = create(capacity=5)["id"]
    real_gate_get, published = event_services.gate_get, []

    def publish_first(**kwargs):
        if not published:
            published.append(publish(event_id))
        return real_gate_get(**kwargs)

    monkeypatch.setattr(event_services, "gate_get", publish_first)
    stored = selectors.event_get(event_id=event_id)
    event_services.event_update(event_id=event_id, expected_version=int(stored.version), title=stored.title,
                                description="", location="", starts_at=STARTS, capacity=20, updated_by="soc")
    assert not any(shard.draft for shard in shards.shards_get(event_id=event_id, count=4))
    assert broken_invariants() == {}


def test_a_cancellation_read_before_the_publication_reads_again_and_removes_the_new_facets(people, moto_ddb,
                                                                                           monkeypatch):
    event_id = create()["id"]
    real, published = event_services._cancel_transaction, []

    def publish_first(event, **kwargs):
        if not published:
            published.append(publish(event_id))
        return real(event, **kwargs)

    monkeypatch.setattr(event_services, "_cancel_transaction", publish_first)
    event_services.event_cancel_once(event_id=event_id, user_id="u-soc", cancelled_by="soc",
                                     idempotency_key=str(uuid.uuid4()), fingerprint="c")
    assert selectors.event_get(event_id=event_id).is_cancelled
    found = everywhere(event_id)
    assert not any(found[path] for path in ("search", "category", "organizer", "public")), found


def test_an_approver_sends_a_draft_back_with_a_note_its_team_reads_until_published(people, moto_ddb):
    event_id = create()["id"]
    approver = logged_in(people["ann"])
    key = str(uuid.uuid4())
    sent = approver.post(f"/approvals/{event_id}/send-back/", {"idempotency_key": key, "note": "Add a venue."})
    assert sent.status_code == 302
    event = selectors.event_get(event_id=event_id)
    assert event.is_draft and (event.sent_back_by, event.sent_back_note) == ("Ann", "Add a venue.")
    page = logged_in(people["soc"]).get(f"/events/{event_id}/").content.decode()
    assert "Sent back by Ann:</strong> Add a venue." in page
    assert approver.post(f"/approvals/{event_id}/send-back/", {"idempotency_key": key, "note": "Add a venue."}
                         ).status_code == 302  # the same tap again: its first answer
    publish(event_id)
    assert selectors.event_get(event_id=event_id).sent_back_note is None
    late = approver.post(f"/approvals/{event_id}/send-back/", {"idempotency_key": str(uuid.uuid4()), "note": "x"})
    assert late.status_code == 409 and "Already published by Ann" in late.content.decode()


@pytest.mark.parametrize("note", ["", "  ", "x" * 501, "a\x00b", "bell\x07"])
def test_a_send_back_note_nobody_could_read_is_a_readable_400(people, moto_ddb, note):
    event_id = create()["id"]
    page = logged_in(people["ann"]).post(f"/approvals/{event_id}/send-back/",
                                         {"idempotency_key": str(uuid.uuid4()), "note": note})
    assert page.status_code == 400 and 'role="alert"' in page.content.decode()
    assert selectors.event_get(event_id=event_id).sent_back_note is None
