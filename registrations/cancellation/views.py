"""Staff's "Cancel event" page: a confirmation that says how many people will be told, an optional reason, then one
tap.

Thin: it reads the event's counters for the count and calls ``event_services.event_cancel_once``. The confirmation
renders one idempotency key with its button, so a double-click (or a retried post) is one cancellation; the
service makes a second cancellation of the same event a no-op anyway. Works without JavaScript.
"""

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from registrations import selectors
from registrations.cancellation.forms import EventCancelForm
from registrations.events import services as event_services
from registrations.views import event_or_404
from tems.audit import actor_of
from tems.errors import DomainError
from tems.http import after_save, said_once
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key

PAGE = "registrations/event_cancel.html"


@require_http_methods(["GET", "POST"])
@login_required
def event_cancel_page(request: HttpRequest, event_id: str) -> HttpResponse:
    event = event_or_404(event_id)
    problem = None
    form = EventCancelForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            event_services.event_cancel_once(
                event_id=event_id, user_id=user_key(request.user), cancelled_by=request.user.get_username(),
                idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request),
                reason=form.cleaned_data["reason"], actor=actor_of(request))
        except DomainError as error:
            if error.code == "not_found":
                raise Http404(error.detail) from None
            problem = error.detail
        else:
            said_once(request, f"“{event.title}” is cancelled. Everyone registered or waiting is being told by "
                               "e-mail, once each.")
            return after_save(request, reverse("registrations:event_detail", kwargs={"event_id": event_id}))
    seats = selectors.seats_for(event=event)
    confirmed, waiting = seats.registered, seats.waiting
    # A refused reason keeps the tap's key: the corrected post is the same tap.
    key = request.POST.get("idempotency_key") if request.method == "POST" and form.errors else None
    context = {"event": event, "seats": seats, "confirmed": confirmed, "waiting": waiting, "told": confirmed + waiting,
               "key": key or str(uuid.uuid4()), "problem": problem, "form": form}
    status = 409 if problem else 400 if form.errors else 200
    return render(request, PAGE, context, status=status)
