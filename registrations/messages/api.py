"""JSON API of staff messages to an event's attendees and their progress (problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations import selectors, serializers
from registrations.errors import RegistrationError
from registrations.messages import services as messages
from registrations.messages.forms import MessageForm
from tems.api import api_view, json_response, parse_form
from tems.audit import actor_of
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key
from tems.pagination import next_page_url, page_args


@api_view("GET", "POST")
def event_messages(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: ``POST`` ``{audience, subject, body}`` with an Idempotency-Key sends a message to the event's
    attendees once (202, ``Location`` of its progress); ``GET`` lists the event's messages and reminders, newest
    first, a page at a time (``?cursor=&limit=``, ``next``)."""
    if request.method == "GET":
        selectors.event_get(event_id=event_id, consistent=False)  # 404 for an unknown event
        page = selectors.message_list(event_id=event_id, **page_args(request))
        return json_response({"messages": [serializers.message_to_dict(m) for m in page],
                              "next": next_page_url(request, page)})
    form = parse_form(request, MessageForm, RegistrationError)
    outcome = messages.message_send_once(
        event_id=event_id, user_id=user_key(request.user), created_by=request.user.get_username(),
        idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request), actor=actor_of(request),
        **form.cleaned_data)
    return outcome.response.to_http(replayed=outcome.replayed)



@api_view("GET")
def message_detail(request: HttpRequest, event_id: str, message_id: str) -> HttpResponse:
    """Staff: a message's progress: how many mails its fan-out queued so far, and whether it is done."""
    return json_response(serializers.message_to_dict(selectors.message_get(event_id=event_id, message_id=message_id)))

