"""JSON API of the door (staff only; session auth, CSRF via X-CSRFToken, problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations.checkins import selectors, services
from registrations.questions import question_sets
from tems.api import api_view, json_response, parse_json_object
from tems.idempotency import fingerprint, idempotent, key_from_request
from tems.identity import user_key


@api_view("POST")
def checkin_create(request: HttpRequest, event_id: str) -> HttpResponse:
    """Check a scanned ticket in: once per ticket, replayed per Idempotency-Key (one key per scan)."""
    data = parse_json_object(request)
    staff_id = user_key(request.user)
    outcome = services.checkin_create(
        event_id=event_id, ticket_text=data.get("ticket"), door=data.get("door"), staff_id=staff_id,
        staff_name=request.user.get_username(),
        idempotency_key=key_from_request(request),
        fingerprint=fingerprint(method=request.method, route=request.path, user_id=staff_id, payload=data),
    )
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("DELETE")
@idempotent
def checkin_undo(request: HttpRequest, event_id: str, registration_id: str) -> HttpResponse:
    return json_response(services.checkin_undo(event_id=event_id, registration_id=registration_id,
                                               undone_by=request.user.get_username()))


@api_view("GET")
def checkin_stats(request: HttpRequest, event_id: str) -> HttpResponse:
    response = json_response(selectors.checkin_stats(event_id=event_id))
    response["Cache-Control"] = "no-store"
    return response


@api_view("GET")
def door_answers(request: HttpRequest, event_id: str, registration_id: str) -> HttpResponse:
    """The ticket holder's answers to the questions staff show at the door: ``{"answers": [{label, value}]}``."""
    response = json_response({"answers": question_sets.door_answers(event_id=event_id,
                             registration_id=registration_id)})
    response["Cache-Control"] = "no-store"
    return response
