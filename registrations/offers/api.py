"""JSON API of a waitlist offer: accept or decline, once per Idempotency-Key (problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations.offers import services as offer_services
from tems.api import api_view
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key


@api_view("POST")
def offer_accept(request: HttpRequest, offer_id: str) -> HttpResponse:
    """Take the seat offered to the caller, once per Idempotency-Key; 409 ``offer_expired`` after its end."""
    outcome = offer_services.offer_accept(user_id=user_key(request.user), registration_id=offer_id,
                                    idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request))
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("POST")
def offer_decline(request: HttpRequest, offer_id: str) -> HttpResponse:
    """Give the offered seat up (it goes to the next in line at once), once per Idempotency-Key."""
    outcome = offer_services.offer_decline(user_id=user_key(request.user), registration_id=offer_id,
                                     idempotency_key=key_from_request(request),
                                     fingerprint=request_fingerprint(request))
    return outcome.response.to_http(replayed=outcome.replayed)
