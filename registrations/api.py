"""JSON API of the registrations app (session auth, CSRF via X-CSRFToken, problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations import attendees, selectors, services
from registrations.errors import RegistrationError
from registrations.forms import EventForm, MessageForm
from registrations.services import messages
from registrations.telemetry import count_registration
from tems.api import api_view, json_response, parse_form
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key
from tems.pagination import next_page_url, page_args


@api_view("GET", "POST")
def events(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _event_create(request)
    # Upcoming events, soonest first; ``?past=1`` for past events, most recent first. ``?cursor=`` pages on.
    page = selectors.event_page(past=request.GET.get("past") == "1", **page_args(request))
    return json_response({"events": [selectors.event_to_dict(e) for e in page],
                          "next": next_page_url(request, page)})


def _event_create(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise RegistrationError("forbidden", "Only staff may create events.")
    form = parse_form(request, EventForm, RegistrationError)
    key = key_from_request(request)
    user_id = user_key(request.user)
    outcome = services.event_create_once(
        **form.cleaned_data, user_id=user_id, created_by=request.user.get_username(), idempotency_key=key,
        fingerprint=request_fingerprint(request),
    )
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("GET")
def event_detail(request: HttpRequest, event_id: str) -> HttpResponse:
    return json_response(selectors.event_to_dict(selectors.event_get(event_id=event_id)))


@api_view("POST")
def registration_create(request: HttpRequest, event_id: str) -> HttpResponse:
    """Register the caller for the event; exactly once per student, replayed per Idempotency-Key."""
    user_id = user_key(request.user)
    outcome = services.registration_create(
        event_id=event_id, user_id=user_id, user_name=request.user.get_username(),
        idempotency_key=key_from_request(request),
        fingerprint=request_fingerprint(request),
    )
    count_registration(outcome)
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("GET")
def my_registrations(request: HttpRequest) -> HttpResponse:
    """The caller's registrations, a page at a time: ``{"registrations": [...], "next": url | null}``."""
    page = selectors.registration_page(user_id=user_key(request.user), **page_args(request))
    # A read draws each ticket's QR code inline (cached per ticket); a registration's own answer only links it.
    return json_response({"registrations": [selectors.with_qr_svg(row) for row in page.items],
                          "next": next_page_url(request, page)})


@api_view("DELETE")
def registration_cancel(request: HttpRequest, registration_id: str) -> HttpResponse:
    """Cancel one of the caller's registrations once per Idempotency-Key; someone else's is 404."""
    user_id = user_key(request.user)
    outcome = services.registration_cancel_once(
        user_id=user_id, registration_id=registration_id, idempotency_key=key_from_request(request),
        fingerprint=request_fingerprint(request),
    )
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("GET", staff=True)
def attendee_list(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: the event's attendees by name, ``?status=``, ``?q=<username prefix>``, ``?cursor=``."""
    # 404 for an unknown event, not an empty list
    event = selectors.event_get(event_id=event_id, consistent=False, with_seats=False)
    page = attendees.attendee_page(event_id=event_id, status=request.GET.get("status"),
                                   search=request.GET.get("q"), layout=event.registration_layout,
                                   **page_args(request))
    return json_response({"attendees": page.items, "next": next_page_url(request, page)})


@api_view("GET", "POST", staff=True)
def event_messages(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: ``POST`` ``{audience, subject, body}`` with an Idempotency-Key sends a message to the event's
    attendees once (202, ``Location`` of its progress); ``GET`` lists the event's messages and reminders."""
    if request.method == "GET":
        selectors.event_get(event_id=event_id, consistent=False, with_seats=False)  # 404 for an unknown event
        return json_response({"messages": [messages.message_to_dict(m)
                                           for m in selectors.message_list(event_id=event_id)]})
    form = parse_form(request, MessageForm, RegistrationError)
    outcome = messages.message_send_once(
        event_id=event_id, user_id=user_key(request.user), created_by=request.user.get_username(),
        idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request), **form.cleaned_data)
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("GET", staff=True)
def message_detail(request: HttpRequest, event_id: str, message_id: str) -> HttpResponse:
    """Staff: a message's progress: how many mails its fan-out queued so far, and whether it is done."""
    return json_response(messages.message_to_dict(selectors.message_get(event_id=event_id, message_id=message_id)))


@api_view("POST")
def offer_accept(request: HttpRequest, offer_id: str) -> HttpResponse:
    """Take the seat offered to the caller, once per Idempotency-Key; 409 ``offer_expired`` after its end."""
    outcome = services.offer_accept(user_id=user_key(request.user), registration_id=offer_id,
                                    idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request))
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("POST")
def offer_decline(request: HttpRequest, offer_id: str) -> HttpResponse:
    """Give the offered seat up (it goes to the next in line at once), once per Idempotency-Key."""
    outcome = services.offer_decline(user_id=user_key(request.user), registration_id=offer_id,
                                     idempotency_key=key_from_request(request),
                                     fingerprint=request_fingerprint(request))
    return outcome.response.to_http(replayed=outcome.replayed)
