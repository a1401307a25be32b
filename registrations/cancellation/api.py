"""JSON API of calling an event off, for staff (problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations.cancellation.forms import EventCancelForm
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from tems.api import api_view, parse_form
from tems.audit import actor_of
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key


@api_view("POST")
def event_cancel(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: cancel the event once per Idempotency-Key (200), with an optional ``{"reason": "..."}`` that every
    notice carries; a cancelled event answers the same 200 to any key and sends nothing again. Its notice's
    progress is at ``notice``."""
    # A body is optional: a post without one cancels without a reason.
    has_body = request.META.get("CONTENT_LENGTH") not in (None, "", "0")
    reason = parse_form(request, EventCancelForm, RegistrationError).cleaned_data["reason"] if has_body else ""
    outcome = event_services.event_cancel_once(
        event_id=event_id, user_id=user_key(request.user), cancelled_by=request.user.get_username(),
        idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request), reason=reason,
        actor=actor_of(request))
    return outcome.response.to_http(replayed=outcome.replayed)
