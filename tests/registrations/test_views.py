"""Event pages: access rules, the create form and the stale-edit conflict panel."""

from datetime import UTC, datetime

import pytest

from registrations import selectors, services

STARTS = datetime(2027, 5, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def event(moto_ddb):
    return services.event_create(title="Chess club", starts_at=STARTS, capacity=4, created_by="staff",
                                 location="Room 1")


def form_data(**overrides):
    data = {"title": "Chess club", "description": "", "location": "Room 1", "starts_at": "2027-05-01T10:00",
            "capacity": "4"}
    return {**data, **overrides}


def test_anonymous_is_sent_to_log_in(moto_ddb, client):
    response = client.get("/events/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


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
    response = staff_client.post("/events/new/", form_data(title="Debate night"))
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
    assert "Someone else saved this event first" in page
    assert "Theirs" in page and "Mine" in page
    assert 'name="version" value="2"' in page  # saving again is an explicit "apply mine on top"
    assert selectors.event_get(event_id=event.event_id).title == "Theirs"


def test_conflict_panel_is_a_fragment_for_htmx_and_apply_mine_saves(event, staff_client):
    staff_client.post(f"/events/{event.event_id}/edit/", form_data(title="Theirs", version="1"))
    response = staff_client.post(f"/events/{event.event_id}/edit/", form_data(title="Mine", version="1"),
                                 HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in page and 'id="event-form"' in page and "Someone else saved" in page
    applied = staff_client.post(f"/events/{event.event_id}/edit/", form_data(title="Mine", version="2"),
                                HTTP_HX_REQUEST="true")
    assert applied.status_code == 204 and applied["HX-Redirect"] == f"/events/{event.event_id}/"
    stored = selectors.event_get(event_id=event.event_id)
    assert (stored.title, stored.version) == ("Mine", 3)
