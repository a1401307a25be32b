"""JSON API of publishing a draft, for its approvers (problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations.approvals import services
from registrations.approvals.views import approver_name
from tems.api import api_view
from tems.audit import actor_of
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key


@api_view("POST")
def event_publish(request: HttpRequest, draft_id: str) -> HttpResponse:
    """Publish the draft once per Idempotency-Key (200; the same key replays it byte for byte). Another
    approver's publication first: 409 ``already_published`` with ``published_by``."""
    outcome = services.event_publish_once(
        event_id=draft_id, user_id=user_key(request.user), published_by=approver_name(request.user),
        idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request),
            actor=actor_of(request))
    return outcome.response.to_http(replayed=outcome.replayed)
