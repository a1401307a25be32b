"""Hostile query parameters on every paged list (pages, API, CSV) get a 4xx or a page, never a 5xx."""

import pytest

from tests.registrations.helpers import make_event

HOSTILE = ["\x00", "a" * 5000, "%00", "-1", "99999999999999999999999", "{}", "' OR 1=1"]
LISTS = ("/api/events/{event}/attendees", "/events/{event}/attendees/", "/events/{event}/attendees.csv",
         "/api/events", "/events/", "/api/me/registrations", "/me/registrations/", "/inventory/X1/history/",
         "/api/inventory/X1/history")


PARAMS = ("q", "status", "cursor", "limit", "past")


@pytest.mark.parametrize("value", HOSTILE)
def test_no_list_parameter_makes_a_5xx(ddb, staff_client, value):
    event = make_event(capacity=2)
    for url in (template.format(event=event.event_id) for template in LISTS):
        for param in PARAMS:
            assert staff_client.get(url, {param: value}).status_code < 500, (url, param)


def test_a_lone_surrogate_and_a_nul_in_a_list_parameter_make_no_5xx(ddb, staff_client):
    event = make_event(capacity=2)
    for url in (template.format(event=event.event_id) for template in LISTS):
        for param in PARAMS:
            # As a browser would send them, percent-encoded (the test client cannot encode them).
            assert staff_client.get(f"{url}?{param}=%ED%A0%80%00").status_code < 500, (url, param)
