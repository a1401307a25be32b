"""Pages of events: the lists, an event's page, and staff's create and edit forms."""

import uuid
from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from registrations import edits, selectors
from registrations.checkins import selectors as checkin_selectors
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.events.forms import EventEditForm, EventForm
from registrations.statuses import card_statuses
from registrations.views import event_or_404, panel_context
from tems.decorators import staff_required
from tems.errors import DomainError
from tems.http import after_save, conflict_status
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key
from tems.merge import conflict_panel, load_base, sign_base
from tems.pagination import next_page_url, page_args
from tems.templatetags.when import when_text


@require_GET
@login_required
def event_list(request: HttpRequest) -> HttpResponse:
    return _event_page(request, past=False)


@require_GET
@login_required
def event_list_past(request: HttpRequest) -> HttpResponse:
    return _event_page(request, past=True)


def _event_page(request: HttpRequest, *, past: bool) -> HttpResponse:
    """A page of events; "More events" asks htmx for the next page's cards (a plain link without JavaScript)."""
    try:
        page = selectors.event_page(past=past, **page_args(request))
    except DomainError as error:
        return render(request, "registrations/event_list.html",
                      {"past": past, "events": [], "error": error.detail}, status=400)
    seats = selectors.seat_counts(events=page.items)
    if not past:
        statuses = card_statuses(user_id=user_key(request.user), events=page.items, seats=seats)
        for event in page.items:
            event.card_status = statuses.get(event.event_id)
    template = "registrations/event_list.html"
    if request.htmx:
        template += "#event-page"
    cards = [(event, seats[event.event_id]) for event in page.items]
    return render(request, template, {"past": past, "events": page.items, "cards": cards,
                                      "next_url": next_page_url(request, page),
                                      "continued": bool(request.GET.get("cursor"))})


@require_GET
@login_required
@never_cache  # Back must not show a seat count or a panel from before the last tap
def event_detail(request: HttpRequest, event_id: str) -> HttpResponse:
    event = event_or_404(event_id)
    context = panel_context(request, event)
    if request.user.is_staff:
        context["checkins"] = checkin_selectors.checkin_list(event_id=event_id)
    return render(request, "registrations/event_detail.html", context)


@require_http_methods(["GET", "POST"])
@staff_required
def event_create(request: HttpRequest) -> HttpResponse:
    form = EventForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user_id = user_key(request.user)
        try:
            outcome = event_services.event_create_once(
                **form.cleaned_data, user_id=user_id, created_by=request.user.get_username(),
                idempotency_key=key_from_request(request),
                fingerprint=request_fingerprint(request),
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


LABELS = {"title": "Title", "location": "Location", "starts_at": "Starts", "capacity": "Capacity",
          "description": "Description", "reminder_hours": "Reminder (hours before)",
          "offer_hours": "Offer window (hours)"}


def _base_scope(event_id: str, version: int) -> str:
    return f"event:{event_id}:v{version}"


def _edit_initial(event_id: str, values: dict, version: int) -> dict:
    """Form values for ``values`` (canonical, tems.merge) at ``version``, with the signed base they came from."""
    values = edits.canonical(values)
    return {**values, "starts_at": datetime.fromisoformat(values["starts_at"]), "version": version,
            "base": sign_base(values, scope=_base_scope(event_id, version))}


@require_http_methods(["GET", "POST"])
@staff_required
def event_edit(request: HttpRequest, event_id: str) -> HttpResponse:
    template = "registrations/event_form.html#event-form" if request.htmx else "registrations/event_form.html"
    if request.method == "GET":
        event = event_or_404(event_id)
        form = EventEditForm(initial=_edit_initial(event_id, _initial(event), int(event.version)))
        return render(request, template, {"form": form, "event": event})

    base = _posted_base(request, event_id)
    form = EventEditForm(request.POST, opened_starts_at=base and datetime.fromisoformat(base["starts_at"]))
    conflict = None
    if form.is_valid():
        data = dict(form.cleaned_data)
        expected_version = data.pop("version")
        data.pop("base")
        try:
            outcome = edits.event_edit(event_id=event_id, expected_version=expected_version, base=base, mine=data,
                                       updated_by=request.user.get_username())
        except RegistrationError as error:
            if error.code == "not_found":
                raise Http404(error.detail) from None
            if error.code == "conflict" and "merge" in error.extra:
                conflict = _conflict(event_id, error, data)
                current = error.extra["current"]
                # Nothing is written until they decide: the form holds the merge and is based on their version.
                initial = _edit_initial(event_id, current, int(current["version"]))
                merged = error.extra["merge"].values
                form = EventEditForm(initial={**initial, **merged,
                                              "starts_at": datetime.fromisoformat(merged["starts_at"])})
            else:
                for field, problems in error.errors.items():
                    for problem in problems:
                        form.add_error(field if field in form.fields else None, problem)
                if not error.errors:
                    form.add_error(None, error.detail)
        else:
            note = " Kept the changes saved meanwhile by someone else." if outcome.merge else ""
            messages.success(request, _saved_notice(outcome.saved) + note)
            return after_save(request, reverse("registrations:event_detail", kwargs={"event_id": event_id}))
    event = event_or_404(event_id)
    return render(request, template, {"form": form, "event": event, "conflict": conflict},
                  status=conflict_status(request, conflict))


def _posted_base(request: HttpRequest, event_id: str) -> dict | None:
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        return None
    return load_base(request.POST.get("base", ""), scope=_base_scope(event_id, version), fields=edits.EDITED_FIELDS)


def _conflict(event_id: str, error: RegistrationError, mine: dict) -> dict:
    return conflict_panel(error=error, title="Someone else saved this event while you were editing",
                          theirs=edits.canonical(error.extra["current"]), mine=edits.canonical(mine), labels=LABELS,
                          show=_shown, discard_url=reverse("registrations:event_edit", kwargs={"event_id": event_id}),
                          target="event-form", form_id="event-edit-form")


def _shown(value) -> str:
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        # A start (canonical ISO): shown as people read dates, in the site's time zone.
        return when_text(value)
    return "(empty)" if value is None or value == "" else str(value)


def _saved_notice(saved: event_services.EventUpdate) -> str:
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
        "reminder_hours": event.reminder_hours_or_default,
        "offer_hours": int(event.offer_hours or 0),
        "version": event.version,
    }


