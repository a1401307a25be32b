"""JSON API of events (session auth, CSRF via X-CSRFToken, problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations import selectors, serializers
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.events.forms import EventForm
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
    seats = selectors.seat_counts(events=page.items)
    return json_response({"events": [serializers.event_to_dict(e, seats=seats[e.event_id]) for e in page],
                          "next": next_page_url(request, page)})


def _event_create(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise RegistrationError("forbidden", "Only staff may create events.")
    form = parse_form(request, EventForm, RegistrationError)
    key = key_from_request(request)
    user_id = user_key(request.user)
    outcome = event_services.event_create_once(
        **form.cleaned_data, user_id=user_id, created_by=request.user.get_username(), idempotency_key=key,
        fingerprint=request_fingerprint(request),
    )
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("GET")
def event_detail(request: HttpRequest, event_id: str) -> HttpResponse:
    event = selectors.event_get(event_id=event_id)
    return json_response(serializers.event_to_dict(event, seats=selectors.seats_for(event=event)))

