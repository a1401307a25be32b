"""Pages of a waitlist offer: Accept and Decline from the event page or My registrations, and the page a mail's
signed link opens.

Accept and decline are POSTs with a key per tap (mail scanners fetch links: a GET only shows the offer).
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from registrations import selectors, serializers
from registrations.errors import RegistrationError
from registrations.models import OFFERED
from registrations.offers import services as offer_services
from registrations.offers.links import offer_link_read
from registrations.views import PANEL, event_or_404, offer_buttons, page_errors, panel_context
from tems.clock import utcnow
from tems.errors import DomainError
from tems.idempotency import REPLAYED_HEADER, fingerprint, key_from_request, request_payload
from tems.identity import user_key

OFFER_PAGE = "registrations/offer.html"
OFFER_ACTIONS = {"accept": offer_services.offer_accept, "decline": offer_services.offer_decline}


def _offer_answer(request: HttpRequest, *, user_id: str, registration_id: str) -> tuple[str, str, bool]:
    """Run the tap's accept or decline for ``user_id`` (the session's, or the one a mail's link names): (level,
    notice, replayed); a refusal is a notice, never a 5xx."""
    action = OFFER_ACTIONS.get(request.POST.get("action", ""))
    if action is None:
        return "error", "Choose Accept or Decline.", False
    try:
        outcome = action(user_id=user_id, registration_id=registration_id, idempotency_key=key_from_request(request),
                         fingerprint=fingerprint(method="POST", route=request.path, user_id=user_id,
                                                 payload=request_payload(request)))
    except DomainError as error:
        if error.code == "busy":
            raise
        return "error", error.detail, False
    if outcome.data["state"] == "accepted":
        return "success", "The seat is yours: your ticket is on the event page and in My registrations.", \
            outcome.replayed
    return "success", "You declined the seat: it goes to the next in line.", outcome.replayed


@require_POST
@login_required
@page_errors
def offer_respond(request: HttpRequest, registration_id: str) -> HttpResponse:
    """Accept or decline the caller's offer from the event page or My registrations."""
    level, notice, replayed = _offer_answer(request, user_id=user_key(request.user), registration_id=registration_id)
    offer = selectors.offer_get(user_id=user_key(request.user), registration_id=registration_id)
    if request.htmx and request.POST.get("from") == "event":
        event = event_or_404(offer.event_id)
        response = render(request, PANEL, {**panel_context(request, event, notice=(level, notice)),
                                          "seats_oob": True})
        if replayed:
            response[REPLAYED_HEADER] = "true"
        return response
    getattr(messages, level)(request, notice)
    if request.POST.get("from") == "event":
        return redirect("registrations:event_detail", event_id=offer.event_id)
    return redirect("registrations:my_registrations")


@require_http_methods(["GET", "POST"])
def offer_page(request: HttpRequest, token: str) -> HttpResponse:
    """The page a mail's link opens: the offer and, while it is open, Accept and Decline (each a POST)."""
    try:
        link = offer_link_read(token)
        notice = None
        if request.method == "POST":
            notice = _offer_answer(request, user_id=link.user_id, registration_id=link.registration_id)[:2]
        offer = selectors.offer_get(user_id=link.user_id, registration_id=link.registration_id)
    except RegistrationError as error:
        if error.code == "busy":
            return render(request, OFFER_PAGE, {"notice": ("error", error.detail), "token": token}, status=503)
        return render(request, OFFER_PAGE, {"notice": ("error", error.detail)}, status=404)
    event = event_or_404(offer.event_id)
    ends = serializers.offer_ends(ends_at=offer.ends_at, starts_at=event.starts_at)
    is_open = offer.state == OFFERED and ends > utcnow()
    return render(request, OFFER_PAGE, {"offer": offer, "event": event, "is_open": is_open, "notice": notice,
                                        "ends": ends,
                                        "offer_buttons": offer_buttons(),
                                        "action_url": reverse("registrations:offer_page", kwargs={"token": token})})
