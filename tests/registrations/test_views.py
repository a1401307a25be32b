"""Event pages (access rules, the create form, the stale-edit conflict panel) and the registration pages."""

import re
import uuid

import pytest

from registrations import selectors, services
from registrations.events import services as event_services
from registrations.seating import shards
from registrations.seating.hints import hints
from tems.identity import user_key
from tests.helpers import assert_invariants_clean
from tests.registrations.helpers import STARTS, make_event, register


@pytest.fixture
def event(moto_ddb):
    return event_services.event_create(title="Chess club", starts_at=STARTS, capacity=4, created_by="staff",
                                 location="Room 1")


def form_data(**overrides):
    data = {"title": "Chess club", "description": "", "location": "Room 1", "starts_at": "2027-05-01T10:00",
            "capacity": "4"}
    return {**data, **overrides}


def test_anonymous_is_sent_to_log_in_for_an_event_not_listed_publicly(event, client):
    response = client.get(f"/events/{event.event_id}/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert "Chess club" not in client.get("/events/").content.decode()  # the list shows public events only


def test_student_sees_events_with_seats(event, student_client):
    page = student_client.get("/events/").content.decode()
    assert "Chess club" in page and "0 / 4 seats taken" in page
    assert "New event" not in page
    detail = student_client.get(f"/events/{event.event_id}/").content.decode()
    assert "Room 1" in detail and "Edit event" not in detail


def test_unknown_event_page_is_404(moto_ddb, student_client):
    assert student_client.get("/events/nope/").status_code == 404


def test_student_cannot_open_staff_pages(event, student_client):
    assert student_client.get("/events/new/").status_code == 403
    assert student_client.post(f"/events/{event.event_id}/edit/", form_data(version="1")).status_code == 403
    assert selectors.event_get(event_id=event.event_id).version == 1


def test_staff_creates_event_from_the_form(moto_ddb, staff_client):
    response = staff_client.post("/events/new/", form_data(title="Debate night", idempotency_key=str(uuid.uuid4())))
    assert response.status_code == 302
    event_id = response["Location"].rstrip("/").rsplit("/", 1)[-1]
    assert selectors.event_get(event_id=event_id).title == "Debate night"


def test_invalid_form_shows_readable_errors(moto_ddb, staff_client):
    response = staff_client.post("/events/new/", form_data(capacity="0", title=""))
    page = response.content.decode()
    assert response.status_code == 200
    assert "Ensure this value is greater than or equal to 1." in page and "This field is required." in page


def test_stale_edit_shows_conflict_panel_and_saves_nothing(event, staff_client):
    staff_client.post(f"/events/{event.event_id}/edit/", form_data(title="Theirs", version="1"))
    response = staff_client.post(f"/events/{event.event_id}/edit/", form_data(title="Mine", version="1"))
    page = response.content.decode()
    assert response.status_code == 409
    assert "Someone else saved this event while you were editing" in page
    assert "Theirs" in page and "Mine" in page
    assert 'name="version" value="2"' in page  # saving again is an explicit "apply mine on top"
    assert selectors.event_get(event_id=event.event_id).title == "Theirs"


def test_conflict_panel_is_a_fragment_for_htmx_and_apply_mine_saves(event, staff_client):
    staff_client.post(f"/events/{event.event_id}/edit/", form_data(title="Theirs", version="1"))
    response = staff_client.post(f"/events/{event.event_id}/edit/", form_data(title="Mine", version="1"),
                                 HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 409  # htmx swaps it: responseHandling in base.html
    assert "<html" not in page and 'id="event-form"' in page and "Someone else saved" in page
    applied = staff_client.post(f"/events/{event.event_id}/edit/", form_data(title="Mine", version="2"),
                                HTTP_HX_REQUEST="true")
    assert applied.status_code == 200 and applied["HX-Redirect"] == f"/events/{event.event_id}/"
    stored = selectors.event_get(event_id=event.event_id)
    assert (stored.title, stored.version) == ("Mine", 3)


# --- registration pages (DynamoDB Local: registering is transactional) ----------------------------------------

KEY_INPUT = re.compile(r'name="idempotency_key" value="([0-9a-f-]{36})"')


@pytest.fixture
def small_event(ddb):
    return make_event(capacity=1, title="Robot night")


def test_event_page_renders_a_fresh_key_into_the_register_form(small_event, student_client):
    first = student_client.get(f"/events/{small_event.event_id}/").content.decode()
    second = student_client.get(f"/events/{small_event.event_id}/").content.decode()
    keys = KEY_INPUT.findall(first) + KEY_INPUT.findall(second)
    assert len(keys) == 2 and keys[0] != keys[1] and all(uuid.UUID(k) for k in keys)
    assert "data-idempotent" in first and 'hx-disabled-elt="find button[type=submit]"' in first
    assert '<span class="idle-label">Register</span>' in first
    assert "/static/js/tems-idempotency.js" in first and "My registrations" in first


def test_plain_post_without_javascript_registers_and_a_resubmission_replays(small_event, student, student_client):
    page = student_client.get(f"/events/{small_event.event_id}/").content.decode()
    key = KEY_INPUT.search(page).group(1)
    url = f"/events/{small_event.event_id}/register/"
    response = student_client.post(url, {"idempotency_key": key})
    assert response.status_code == 302 and response["Location"] == f"/events/{small_event.event_id}/"
    shown = student_client.get(response["Location"]).content.decode()
    assert "You are registered for “Robot night”." in shown and "Confirmed" in shown and "/qr.svg" in shown
    assert "Cancel registration" in shown
    # The browser re-posting the same form (refresh, back button) is the same tap.
    again = student_client.post(url, {"idempotency_key": key})
    assert again.status_code == 302
    assert len(selectors.registration_list(user_id=user_key(student))) == 1
    assert_invariants_clean()


def test_htmx_tap_swaps_in_the_confirmation_with_qr_and_seats(small_event, student_client):
    response = student_client.post(f"/events/{small_event.event_id}/register/", HTTP_HX_REQUEST="true",
                                   HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    page = response.content.decode()
    assert response.status_code == 200 and "<html" not in page
    # The QR code is an image drawn by its own GET, not drawn on the write path.
    assert 'id="registration-panel"' in page and "/qr.svg" in page and "<svg" not in page
    assert "You have a seat." in page
    assert 'id="seats" hx-swap-oob="true"' in page and "1 / 1 seats taken" in page


def test_htmx_tap_on_a_full_event_shows_the_waitlist_position(small_event, student_client, other_student):
    register(small_event.event_id, "someone")
    response = student_client.post(f"/events/{small_event.event_id}/register/", HTTP_HX_REQUEST="true",
                                   HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    page = response.content.decode()
    assert "number 1 on the waiting list" in page and 'class="position">1<' in page
    assert "Leave the waiting list" in page


def test_a_waiting_tap_shows_its_position_as_read_now_not_as_the_answer_counted_it(ddb, settings, student,
                                                                                   student_client):
    """The answer's position is ``ticket - left`` as of the join's block: it counts another lane's unused
    tickets as people ahead (at the end of a burst, up to thousands). The page and its notice show the exact
    position read now, which the next page load shows too."""
    settings.SEATS_PER_SHARD, settings.WAITLIST_BLOCK_SECONDS = 1, 60
    event = make_event(capacity=2, title="Robot night")
    hints.remember_shards(event.event_id, 2)
    mine = shards.home_shard(user_key(student), 2)
    other = [f"u{n}" for n in range(200) if shards.home_shard(f"u{n}", 2) != mine]
    for user in other[:2]:
        register(event.event_id, user)  # the two seats
    # Two joiners of the other lane: ticket 1, then a block of four whose tickets 3-5 nobody has yet.
    assert [register(event.event_id, user).data["position_at_most"] for user in other[2:4]] == [1, 2]
    response = student_client.post(f"/events/{event.event_id}/register/", HTTP_HX_REQUEST="true",
                                   HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    page = response.content.decode()
    claim = selectors.claim_get(event_id=event.event_id, user_id=user_key(student))
    assert (int(claim.lane), int(claim.ticket)) == (mine, 6)  # so the answer said 6 - 0 departed = 6
    assert "number 3 on the waiting list" in page and 'class="position">3<' in page
    again = student_client.get(f"/events/{event.event_id}/").content.decode()
    assert 'class="position">3<' in again


def test_full_event_offers_the_waiting_list(small_event, student_client):
    register(small_event.event_id, "someone")
    page = student_client.get(f"/events/{small_event.event_id}/").content.decode()
    assert "Join the waiting list" in page


def test_post_without_a_key_is_refused_with_a_message(small_event, student, student_client):
    response = student_client.post(f"/events/{small_event.event_id}/register/", {}, follow=True)
    assert "Idempotency-Key header is required" in response.content.decode()
    assert selectors.registration_list(user_id=user_key(student)) == []


def test_my_registrations_lists_them_with_idempotent_cancel_buttons(small_event, student, student_client):
    register(small_event.event_id, user_key(student))
    page = student_client.get("/me/registrations/").content.decode()
    assert "Robot night" in page and "Confirmed" in page and "Cancel registration…" in page
    # Cancelling asks first: the key for the tap is on the confirmation, one per question asked.
    registration_id = re.search(r'/registrations/([0-9a-f]+)/cancel/\?from=list', page).group(1)
    confirm = student_client.get(f"/registrations/{registration_id}/cancel/?from=list").content.decode()
    assert "goes back to the free seats, as nobody is waiting" in confirm and len(KEY_INPUT.findall(confirm)) == 1
    assert "Yes, cancel my registration" in confirm and "Keep my seat" in confirm


def test_cancel_from_the_list_with_htmx_replays_the_same_tap(small_event, student, student_client):
    registration_id = register(small_event.event_id, user_key(student)).data["registration_id"]
    key = str(uuid.uuid4())
    url = f"/registrations/{registration_id}/cancel/"
    first = student_client.post(url, {"from": "list"}, HTTP_HX_REQUEST="true", HTTP_IDEMPOTENCY_KEY=key)
    page = first.content.decode()
    assert first.status_code == 200 and page.count("Cancelled") == 1 and "is cancelled" in page
    assert f'id="registration-{registration_id}"' in page
    again = student_client.post(url, {"from": "list"}, HTTP_HX_REQUEST="true", HTTP_IDEMPOTENCY_KEY=key)
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    assert selectors.registration_list(user_id=user_key(student)) == []
    assert_invariants_clean()


def test_cancel_without_javascript_redirects_and_promotes(small_event, student, student_client):
    registration_id = register(small_event.event_id, user_key(student)).data["registration_id"]
    register(small_event.event_id, "next-in-line")
    response = student_client.post(f"/registrations/{registration_id}/cancel/",
                                   {"from": "event", "idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 302 and response["Location"] == f"/events/{small_event.event_id}/"
    page = student_client.get(response["Location"]).content.decode()
    assert "is cancelled" in page and 'idle-label">Register<' not in page and "Join the waiting list" in page
    assert selectors.claim_get(event_id=small_event.event_id, user_id="next-in-line").status == "confirmed"


def test_cancelling_someone_elses_registration_page_is_404(small_event, student_client):
    registration_id = register(small_event.event_id, "someone").data["registration_id"]
    response = student_client.post(f"/registrations/{registration_id}/cancel/",
                                   {"idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 404
    assert selectors.claim_get(event_id=small_event.event_id, user_id="someone") is not None


def test_a_busy_cancel_is_not_stored_so_the_same_tap_can_retry(small_event, student, student_client, monkeypatch):
    registration_id = register(small_event.event_id, user_key(student)).data["registration_id"]
    key = str(uuid.uuid4())
    url = f"/registrations/{registration_id}/cancel/"

    def busy(**kwargs):
        raise services.RegistrationError("busy", "Busy, try again.", retry_after=1)

    monkeypatch.setattr(services, "registration_cancel_once", busy)
    refused = student_client.post(url, {"idempotency_key": key}, follow=True)
    assert "Busy, try again." in refused.content.decode()
    monkeypatch.undo()
    retried = student_client.post(url, {"idempotency_key": key})
    assert retried.status_code == 302 and not retried.has_header("Idempotent-Replayed")
    assert selectors.registration_list(user_id=user_key(student)) == []


def test_cancel_asks_first_without_javascript_and_says_what_leaving_the_waiting_list_did(small_event, student,
                                                                                          student_client):
    register(small_event.event_id, "first-in")
    registration_id = register(small_event.event_id, user_key(student)).data["registration_id"]
    url = f"/registrations/{registration_id}/cancel/"
    confirm = student_client.get(f"{url}?from=event")
    page = confirm.content.decode()
    assert confirm.status_code == 200 and "<html" in page and "Leave the waiting list?" in page
    assert "You are number 1 on the waiting list" in page and "Yes, leave the waiting list" in page
    assert student_client.get(f"{url}?from=event&keep=1")["Location"] == f"/events/{small_event.event_id}/"
    fragment = student_client.get(f"{url}?from=event", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and 'hx-target="#registration-panel"' in fragment and "autofocus" in fragment
    done = student_client.post(url, {"from": "event", "status": "waitlisted", "idempotency_key": str(uuid.uuid4())},
                               follow=True).content.decode()
    assert "You left the waiting list for “Robot night”." in done and "is cancelled" not in done


def test_someone_elses_registration_has_no_confirmation_page(small_event, student_client):
    registration_id = register(small_event.event_id, "someone-else").data["registration_id"]
    assert student_client.get(f"/registrations/{registration_id}/cancel/").status_code == 404


def test_event_page_and_my_registrations_are_never_cached(small_event, student_client):
    for url in (f"/events/{small_event.event_id}/", "/me/registrations/"):
        assert "no-store" in student_client.get(url)["Cache-Control"]
