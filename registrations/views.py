"""Pages of the registrations app: thin, they parse input, call a service and render."""

import functools
import uuid
from collections.abc import Callable
from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from registrations import selectors, services
from registrations.checkins import selectors as checkin_selectors
from registrations.errors import RegistrationError
from registrations.forms import EventEditForm, EventForm
from tems.decorators import staff_required
from tems.http import after_save, conflict_status
from tems.errors import DomainError
from tems.identity import user_key
from tems.idempotency import REPLAYED_HEADER, fingerprint, key_from_request, request_payload


def _event_or_404(event_id: str):
    try:
        return selectors.event_get(event_id=event_id)
    except RegistrationError as error:
        raise Http404(error.detail) from None


@require_GET
@login_required
def event_list(request: HttpRequest) -> HttpResponse:
    upcoming, past = selectors.event_list()
    return render(request, "registrations/event_list.html", {"upcoming": upcoming, "past": past})


@require_GET
@login_required
@never_cache  # Back must not show a seat count or a panel from before the last tap
def event_detail(request: HttpRequest, event_id: str) -> HttpResponse:
    event = _event_or_404(event_id)
    context = _panel_context(request, event)
    if request.user.is_staff:
        context["checkins"] = checkin_selectors.checkin_list(event_id=event_id)
    return render(request, "registrations/event_detail.html", context)


# --- registration pages -------------------------------------------------------------------------------------
# The register and cancel forms carry an idempotency key: rendered fresh by the server (a plain post works
# without JavaScript) and replaced at the moment of each tap by static/js/tems-idempotency.js.

PANEL = "registrations/event_detail.html#registration-panel"
ROW = "registrations/my_registrations.html#registration-row"


def _panel_context(request: HttpRequest, event, *, registration: dict | None = None,
                   notice: tuple[str, str] | None = None, lookup: bool = True) -> dict:
    if registration is None and lookup:
        claim = selectors.claim_get(event_id=event.event_id, user_id=user_key(request.user))
        registration = selectors.registration_view(registration=claim) if claim else None
    return {"event": event, "registration": registration, "fresh_key": str(uuid.uuid4()), "notice": notice}


def _registration_notice(outcome: services.RegistrationOutcome, event) -> str:
    data = outcome.data
    if outcome.response.status == 200:
        return f"You were already registered for “{event.title}”: here is your registration."
    if data["status"] == "waitlisted":
        return f"“{event.title}” is full: you are number {data['position']} on the waiting list."
    return f"You are registered for “{event.title}”."


def _page_errors(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A refusal before the view ran (bad key, key reused, still in flight) becomes a message, not a crash."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except DomainError as error:
            return _error_redirect(request, error, reverse("registrations:my_registrations"))

    return wrapper


def _error_redirect(request: HttpRequest, error: DomainError, url: str) -> HttpResponse:
    if error.code == "not_found":
        raise Http404(error.detail)
    messages.error(request, error.detail)
    return after_save(request, url)


@require_POST
@login_required
def registration_create(request: HttpRequest, event_id: str) -> HttpResponse:
    user_id = user_key(request.user)
    event_url = reverse("registrations:event_detail", kwargs={"event_id": event_id})
    try:
        outcome = services.registration_create(
            event_id=event_id, user_id=user_id, user_name=request.user.get_username(),
            idempotency_key=key_from_request(request),
            fingerprint=fingerprint(method=request.method, route=request.path, user_id=user_id,
                                    payload=request_payload(request)),
        )
    except DomainError as error:
        return _error_redirect(request, error, event_url)
    event = _event_or_404(event_id)  # fresh seat counts for the page; the registration is already decided
    notice = _registration_notice(outcome, event)
    if request.htmx:
        context = _panel_context(request, event, registration=outcome.data, notice=("success", notice))
        response = render(request, PANEL, {**context, "seats_oob": True})
        if outcome.kind == "replayed":
            # Same contract as the API: a retried tap is told it was answered from the first one.
            response[REPLAYED_HEADER] = "true"
        return response
    messages.success(request, notice)
    return redirect(event_url)


@require_GET
@login_required
@never_cache  # Back must not show a seat count or a panel from before the last tap
def my_registrations(request: HttpRequest) -> HttpResponse:
    registrations = selectors.registration_list(user_id=user_key(request.user))
    for row in registrations:
        # One key per form: each cancel button is its own tap.
        row["fresh_key"] = str(uuid.uuid4())
        row["starts"] = datetime.fromisoformat(row["event_starts_at"]) if row["event_starts_at"] else None
    return render(request, "registrations/my_registrations.html", {"registrations": registrations})


CANCEL_CONFIRM = "registrations/cancel_confirm.html"
CANCEL_STEP = "registrations/_cancel_form.html"


@require_http_methods(["GET", "POST"])
@login_required
@_page_errors
def registration_cancel(request: HttpRequest, registration_id: str) -> HttpResponse:
    """GET asks first (a page, or the question swapped in place by htmx); POST cancels."""
    from_event_page = request.POST.get("from", request.GET.get("from")) == "event"
    if request.method == "GET":
        return _cancel_confirm(request, registration_id, from_event_page=from_event_page)
    user_id = user_key(request.user)
    # The key's record is written in the cancel's own transaction: a retried tap replays this outcome.
    outcome = services.registration_cancel_once(
        user_id=user_id, registration_id=registration_id, idempotency_key=key_from_request(request),
        fingerprint=fingerprint(method=request.method, route=request.path, user_id=user_id,
                                payload=request_payload(request)),
    )
    event = _event_or_404(outcome.data["event_id"])
    notice = _cancel_notice(event, was_waitlisted=request.POST.get("status") == "waitlisted")
    if request.htmx:
        if from_event_page:
            context = _panel_context(request, event, notice=("success", notice), lookup=False)
            response = render(request, PANEL, {**context, "seats_oob": True})
        else:
            response = render(request, ROW, {"row": {"registration_id": registration_id, "status": "cancelled",
                                                     "event_id": event.event_id, "event_title": event.title,
                                                     "notice": notice}})
        if outcome.replayed:
            response[REPLAYED_HEADER] = "true"
        return response
    messages.success(request, notice)
    if from_event_page:
        return redirect("registrations:event_detail", event_id=event.event_id)
    return redirect("registrations:my_registrations")


def _cancel_confirm(request: HttpRequest, registration_id: str, *, from_event_page: bool) -> HttpResponse:
    registration = selectors.registration_view(
        registration=selectors.registration_get(user_id=user_key(request.user), registration_id=registration_id))
    event = _event_or_404(registration["event_id"])
    origin = "event" if from_event_page else "list"
    back_url = (reverse("registrations:event_detail", kwargs={"event_id": event.event_id}) if from_event_page
                else reverse("registrations:my_registrations"))
    context = {"registration_id": registration_id, "status": registration["status"],
               "position": registration.get("position"), "event": event, "from": origin, "back_url": back_url,
               "target": "#registration-panel" if from_event_page else "closest li", "fresh_key": str(uuid.uuid4())}
    if request.GET.get("keep"):
        # "Keep my seat": htmx puts the first step back; without JavaScript the link itself leads back.
        return render(request, CANCEL_STEP, context) if request.htmx else redirect(back_url)
    return render(request, f"{CANCEL_CONFIRM}#cancel-confirm" if request.htmx else CANCEL_CONFIRM, context)


def _cancel_notice(event, *, was_waitlisted: bool) -> str:
    if was_waitlisted:
        return f"You left the waiting list for “{event.title}”."
    return (f"Your registration for “{event.title}” is cancelled. Your seat went to the next person on the "
            "waiting list, or back to the free seats if nobody was waiting.")


@require_http_methods(["GET", "POST"])
@staff_required
def event_create(request: HttpRequest) -> HttpResponse:
    form = EventForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user_id = user_key(request.user)
        try:
            outcome = services.event_create_once(
                **form.cleaned_data, user_id=user_id, created_by=request.user.get_username(),
                idempotency_key=key_from_request(request),
                fingerprint=fingerprint(method=request.method, route=request.path, user_id=user_id,
                                        payload=request_payload(request)),
            )
        except DomainError as error:
            form.add_error(None, error.detail)
        else:
            event = outcome.data
            if not outcome.replayed:
                messages.success(request, f"Created “{event['title']}”.")
            return redirect("registrations:event_detail", event_id=event["id"])
    # One key per form shown: each press of "Create event" on this page is the same tap until it succeeds.
    return render(request, "registrations/event_form.html",
                  {"form": form, "creating": True, "fresh_key": str(uuid.uuid4())})


@require_http_methods(["GET", "POST"])
@staff_required
def event_edit(request: HttpRequest, event_id: str) -> HttpResponse:
    template = "registrations/event_form.html#event-form" if request.htmx else "registrations/event_form.html"
    if request.method == "GET":
        event = _event_or_404(event_id)
        form = EventEditForm(initial=_initial(event))
        return render(request, "registrations/event_form.html", {"form": form, "event": event})

    form = EventEditForm(request.POST)
    conflict = None
    if form.is_valid():
        data = dict(form.cleaned_data)
        expected_version = data.pop("version")
        try:
            saved = services.event_update(
                event_id=event_id, expected_version=expected_version, updated_by=request.user.get_username(), **data
            )
        except RegistrationError as error:
            if error.code == "not_found":
                raise Http404(error.detail) from None
            if error.code == "conflict":
                conflict = {"detail": error.detail, "current": error.extra["current"], "mine": data}
                # Re-arm the form at the stored version: saving again is a deliberate "apply mine on top".
                form = EventEditForm(initial={**data, "version": error.extra["current"]["version"]})
            else:
                for field, problems in error.errors.items():
                    for problem in problems:
                        form.add_error(field if field in form.fields else None, problem)
        else:
            messages.success(request, _saved_notice(saved))
            return after_save(request, reverse("registrations:event_detail", kwargs={"event_id": event_id}))
    event = _event_or_404(event_id)
    return render(request, template, {"form": form, "event": event, "conflict": conflict},
                  status=conflict_status(request, conflict))


def _saved_notice(saved: services.EventUpdate) -> str:
    if saved.promotion_pending:
        return ("Saved. Filling the free seats from the waiting list is still being done; "
                "it finishes within a minute.")
    if saved.promoted:
        return f"Saved. {saved.promoted} moved up from the waiting list."
    return "Saved."


def _initial(event) -> dict:
    return {
        "title": event.title,
        "description": event.description,
        "location": event.location,
        "starts_at": event.starts_at,
        "capacity": event.capacity,
        "version": event.version,
    }
