"""JSON API of events (session auth, CSRF via X-CSRFToken, problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations import selectors, serializers
from registrations.approvals.selectors import draft_visible_to
from registrations.errors import RegistrationError
from registrations.events import selectors as event_selectors
from registrations.events import services as event_services
from registrations.events.forms import EventForm, EventSearchForm, event_form_values
from registrations.models import CONFIRMED
from tems.api import api_view, if_match_version, json_response, parse_form, with_etag
from tems.audit import actor_of
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key
from tems.pagination import next_page_url, page_args
from tems.permissions import EVENT_DOOR, EVENT_MANAGE, holds, teams_within
from tems.teams.selectors import team_name, team_names


@api_view("GET", "POST")
def events(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _event_create(request)
    # Upcoming events, soonest first; ``?past=1`` for past events, most recent first. ``?cursor=`` pages on.
    # The list's search and filters (``?q=&from=&to=&category=&organizer=&mode=&free=``) as on the page.
    if any(request.GET.get(name) for name in ("q", "from", "to", "category", "organizer", "mode", "free")):
        filters = EventSearchForm(request.GET).filters(public_only=False)
        page, seats = event_selectors.event_search(filters=filters, **page_args(request))
    else:
        page = selectors.event_page(past=request.GET.get("past") == "1", **page_args(request))
        seats = selectors.seat_counts(events=page.items)
    # The list shows the link to the event's staff; a registrant finds it on the event itself (one read each).
    managed = teams_within(request.user, EVENT_MANAGE)
    names = team_names(event.team for event in page)
    return json_response({"events": [serializers.event_to_dict(
                                         e, seats=seats[e.event_id], team_name=names.get(e.team),
                                         with_online_url=managed is None or (e.team is not None and e.team in managed))
                                     for e in page],
                          "next": next_page_url(request, page)})


def _event_create(request: HttpRequest) -> HttpResponse:
    # Who may create at all is tems.permissions' (EVENT_CREATE); the form keeps the team to one of theirs.
    form = parse_form(request, EventForm, RegistrationError, user=request.user)
    key = key_from_request(request)
    user_id = user_key(request.user)
    outcome = event_services.event_create_once(
        **form.cleaned_data, team_name=team_name(form.cleaned_data["team"]),
        user_id=user_id, created_by=request.user.get_username(), idempotency_key=key,
        fingerprint=request_fingerprint(request), actor=actor_of(request),
    )
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("GET", "PUT")
def event_detail(request: HttpRequest, event_id: str) -> HttpResponse:
    if request.method == "PUT":
        return _event_update(request, event_id)
    event = selectors.event_get(event_id=event_id)
    if event.is_draft and not draft_visible_to(request.user, event):
        raise RegistrationError("not_found", f"There is no event with id {event_id!r}.")
    return with_etag(json_response(serializers.event_to_dict(event, seats=selectors.seats_for(event=event),
                                                             with_online_url=_sees_online_url(request, event),
                                                             team_name=team_name(event.team))),
                     int(event.version))


def _sees_online_url(request: HttpRequest, event) -> bool:
    """The online link: for the event's team staff, and for a person whose place is confirmed."""
    if holds(request.user, EVENT_MANAGE, team=event.team) or holds(request.user, EVENT_DOOR, team=event.team,
                                                                   event_id=event.event_id):
        return True
    claim = selectors.claim_get(event_id=event.event_id, user_id=user_key(request.user))
    return claim is not None and claim.status == CONFIRMED


def _event_update(request: HttpRequest, event_id: str) -> HttpResponse:
    """An edit at the version ``If-Match`` names (428 without it, 412 with ``current`` when another is stored).
    A field the body leaves out keeps its stored value. Who may is ``tems.permissions``' to say."""
    version = if_match_version(request, RegistrationError)
    stored = selectors.event_get(event_id=event_id)
    form = parse_form(request, EventForm, RegistrationError, defaults=event_form_values(stored),
                      opened_starts_at=stored.starts_at)
    try:
        event_services.event_update(event_id=event_id, expected_version=version,
                                    updated_by=request.user.get_username(), actor=actor_of(request),
                                    **form.cleaned_data)
    except RegistrationError as error:
        if error.code != "conflict" or "current" not in error.extra:
            raise
        current = error.extra["current"]
        raise RegistrationError("precondition_failed", f"The event is at version {current['version']}, not "
                                f"{version}: read it again and send your change with its ETag.",
                                current=current, version=current["version"]) from None
    event = selectors.event_get(event_id=event_id)
    return with_etag(json_response(serializers.event_to_dict(event, seats=selectors.seats_for(event=event),
                                                             team_name=team_name(event.team))),
                     int(event.version))

