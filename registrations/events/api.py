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
from tems.teams.selectors import team_names


@api_view("GET", "POST")
def events(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _event_create(request)
    # Upcoming events, soonest first; ``?past=1`` for past events, most recent first. ``?cursor=`` pages on.
    page = selectors.event_page(past=request.GET.get("past") == "1", **page_args(request))
    names = team_names(event.team for event in page)
    return json_response({"events": [serializers.event_to_dict(e, team_name=names.get(e.team)) for e in page],
                          "next": next_page_url(request, page)})


def _event_create(request: HttpRequest) -> HttpResponse:
    # Who may create at all is tems.permissions' (EVENT_CREATE); the form keeps the team to one of theirs.
    form = parse_form(request, EventForm, RegistrationError, user=request.user)
    key = key_from_request(request)
    user_id = user_key(request.user)
    outcome = event_services.event_create_once(
        **form.cleaned_data, team_name=team_names([form.cleaned_data["team"]]).get(form.cleaned_data["team"]),
        user_id=user_id, created_by=request.user.get_username(), idempotency_key=key,
        fingerprint=request_fingerprint(request),
    )
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("GET")
def event_detail(request: HttpRequest, event_id: str) -> HttpResponse:
    event = selectors.event_get(event_id=event_id)
    return json_response(serializers.event_to_dict(event, team_name=team_names([event.team]).get(event.team)))

