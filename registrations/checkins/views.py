"""Pages of the door: the scanner page (for a phone), its service worker, and where a ticket URL lands."""

from pathlib import Path

from django.contrib.auth.decorators import login_required
from django.contrib.staticfiles import finders
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from registrations import selectors as registration_selectors
from registrations.checkins import selectors
from registrations.errors import RegistrationError
from registrations.ticket_tokens import ticket_read, ticket_token
from tems.permissions import EVENT_DOOR, Decision, decide


@require_GET
@login_required
def door(request: HttpRequest, event_id: str) -> HttpResponse:
    try:
        event = registration_selectors.event_get(event_id=event_id, consistent=False)
        stats = selectors.checkin_stats(event_id=event_id)
    except RegistrationError as error:
        raise Http404(error.detail) from None
    response = render(request, "registrations/door.html", {"event": event, "stats": stats})
    # The service worker keeps its own copy for offline reloads; browsers' HTTP caches must not serve stale ones.
    response["Cache-Control"] = "no-cache"
    return response


@require_GET
def door_service_worker(request: HttpRequest, event_id: str) -> HttpResponse:
    """The door page's service worker, served under the page's own path so that its scope covers the page."""
    path = finders.find("js/tems-door-sw.js")
    if path is None:
        raise Http404("The door's service worker is missing from the static files.")
    response = HttpResponse(Path(path).read_bytes(), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    return response


@require_GET
@login_required
def ticket(request: HttpRequest, token: str) -> HttpResponse:
    """Where a phone's camera app lands when it reads a ticket: whoever may work this event's door goes to the
    door, anyone else to the event (a student learns nothing by it, and pays no read: tems.permissions.decide)."""
    try:
        read = ticket_read(text=token)
    except RegistrationError as error:
        return render(request, "registrations/ticket_invalid.html", {"detail": error.detail}, status=400)
    if decide(request.user, EVENT_DOOR, {"event_id": read.event_id}) is Decision.ALLOW:
        url = reverse("checkins:door", kwargs={"event_id": read.event_id})
        token = ticket_token(event_id=read.event_id, registration_id=read.registration_id, user_id=read.user_id)
        return redirect(f"{url}#ticket={token}")
    return redirect("registrations:event_detail", event_id=read.event_id)
