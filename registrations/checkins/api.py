"""JSON API of the door (staff only; session auth, CSRF via X-CSRFToken, problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations import selectors as registration_selectors
from registrations.checkins import selectors, services
from registrations.questions import question_sets
from tems.api import api_view, json_response, parse_json_object
from tems.audit import actor_of
from tems.idempotency import fingerprint, idempotent, key_from_request
from tems.identity import user_key
from tems.pagination import next_page_url


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
        actor=actor_of(request),
    )
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("DELETE")
@idempotent
def checkin_undo(request: HttpRequest, event_id: str, registration_id: str) -> HttpResponse:
    return json_response(services.checkin_undo(event_id=event_id, registration_id=registration_id,
                                               undone_by=request.user.get_username(), actor=actor_of(request)))


@api_view("GET")
def checkin_stats(request: HttpRequest, event_id: str) -> HttpResponse:
    response = json_response(selectors.checkin_stats(event_id=event_id))
    response["Cache-Control"] = "no-store"
    return response


@api_view("GET")
def door_search(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: ``?q=`` a name, username or short code: ``{"attendees": [...], "more": bool}``, each with its
    state, check-in and the ticket a tap sends."""
    registration_selectors.event_get(event_id=event_id, consistent=False)  # 404, not []
    response = json_response(selectors.door_search(event_id=event_id, text=request.GET.get("q")))
    response["Cache-Control"] = "no-store"
    return response


@api_view("GET")
def door_list(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: the door's copy of the whole list, a page at a time (``?cursor=``), for searching offline."""
    registration_selectors.event_get(event_id=event_id, consistent=False)
    page = selectors.door_list_page(event_id=event_id, cursor=request.GET.get("cursor"))
    response = json_response({"attendees": page.items, "next": next_page_url(request, page)})
    response["Cache-Control"] = "no-store"
    return response


@api_view("GET")
def door_answers(request: HttpRequest, event_id: str, registration_id: str) -> HttpResponse:
    """The ticket holder's answers to the questions staff show at the door: ``{"answers": [{label, value}]}``."""
    response = json_response({"answers": question_sets.door_answers(event_id=event_id,
                             registration_id=registration_id)})
    response["Cache-Control"] = "no-store"
    return response
