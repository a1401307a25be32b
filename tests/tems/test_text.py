"""Text that must never be stored (lone surrogates, NUL) is refused at input, and if some was stored before
that rule existed, every page still renders: the value is shown with a replacement character instead."""

import uuid
from datetime import UTC, datetime

import pytest

from inventory import services as inventory_services
from registrations.events import services as event_services
from tems.text import unsafe_text_problem, untypable

BAD_TITLE = "Open\ud800day"


@pytest.mark.parametrize("value", ["\ud800", "a\udfffb", "\x00", "nul\x00"])
def test_unsafe_text_is_named(value):
    assert unsafe_text_problem(value)


@pytest.mark.parametrize("value", ["", "plain", "שלום \u202eevil", "emoji 🎉", "\t\n tabs"])
def test_ordinary_text_passes(value):
    assert unsafe_text_problem(value) is None


@pytest.fixture
def poisoned(ddb, student_client, staff_client):
    """An event and an item whose text fields hold a lone surrogate, written straight through the services.

    DynamoDB Local: moto cannot store such a string at all, real DynamoDB (like DynamoDB Local) did.
    """
    event = event_services.event_create(
        title=BAD_TITLE, description="d\ud800", location="l\udfff", starts_at=datetime(2030, 1, 1, tzinfo=UTC),
        capacity=5, created_by="staffer")
    response = student_client.post(f"/api/events/{event.event_id}/registrations",
                                    HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    assert response.status_code == 201, response.content
    inventory_services.item_create(sku="POISON", name="n\ud800", description="\udc00", quantity=5,
                                   location="x\ud800", actor="staffer")
    inventory_services.item_adjust(sku="POISON", delta=1, reason="r\ud800", actor="staffer")
    return event


def test_pages_render_values_stored_before_the_rule(poisoned, staff_client, student_client):
    for client, url in [(staff_client, "/events/"), (staff_client, f"/events/{poisoned.event_id}/"),
                        (staff_client, f"/events/{poisoned.event_id}/edit/"), (student_client, "/me/registrations/"),
                        (student_client, "/events/"), (staff_client, "/inventory/"),
                        (staff_client, "/inventory/POISON/"), (staff_client, "/inventory/POISON/edit/"),
                        (staff_client, "/inventory/POISON/history/")]:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        assert "\ufffd" in response.content.decode(), url


def test_api_reads_of_such_values_stay_valid_json(poisoned, staff_client, student_client):
    for client, url in [(staff_client, "/api/events"), (staff_client, f"/api/events/{poisoned.event_id}"),
                        (student_client, "/api/me/registrations"), (staff_client, "/api/inventory"),
                        (staff_client, "/api/inventory/POISON"), (staff_client, "/api/inventory/POISON/history")]:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        response.content.decode("utf-8")  # strict: no surrogate escaped into the bytes


@pytest.mark.parametrize("title", ["nul\x00title", "\x00"])
def test_nul_in_a_page_form_is_a_form_error(moto_ddb, staff_client, title):
    response = staff_client.post("/events/new/", {"title": title, "starts_at": "2030-01-01T10:00", "capacity": "3"})
    assert response.status_code == 200 and "Null characters are not allowed" in response.content.decode()


def test_nul_in_an_adjustment_reason_on_the_page_is_a_form_error(moto_ddb, staff_client):
    inventory_services.item_create(sku="CLEAN", name="Clean", quantity=5, actor="staffer")
    response = staff_client.post("/inventory/CLEAN/adjust/", {"direction": "add", "amount": "1", "reason": "a\x00b",
                                                              "idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 400
    assert inventory_services.item_get(sku="CLEAN").quantity == 5


@pytest.mark.parametrize(("value", "expected"), [
    ("Room change:\n\tbring a pen.\r\n", False),  # tabs and line breaks are typed
    ("café ☕", False),
    ("a\x00b", True),
    ("bell\x07", True),
    ("\u2028", True),
    ("\ufeffbom", True),
    ("\x9f", True),
    ("\ud800", True),
])
def test_untypable_finds_what_nobody_types(value, expected):
    assert untypable(value) is expected
