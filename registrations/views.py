"""Pages of the registrations app: thin, they parse input, call a service and render."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from registrations import selectors, services
from registrations.errors import RegistrationError
from registrations.forms import EventEditForm, EventForm
from tems.decorators import staff_required


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
def event_detail(request: HttpRequest, event_id: str) -> HttpResponse:
    event = _event_or_404(event_id)
    return render(request, "registrations/event_detail.html", {"event": event})


@require_http_methods(["GET", "POST"])
@staff_required
def event_create(request: HttpRequest) -> HttpResponse:
    form = EventForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        event = services.event_create(**form.cleaned_data, created_by=request.user.get_username())
        messages.success(request, f"Created “{event.title}”.")
        return redirect("registrations:event_detail", event_id=event.event_id)
    return render(request, "registrations/event_form.html", {"form": form, "creating": True})


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
            services.event_update(
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
            messages.success(request, "Saved.")
            if request.htmx:
                response = HttpResponse(status=204)
                response["HX-Redirect"] = reverse("registrations:event_detail", kwargs={"event_id": event_id})
                return response
            return redirect("registrations:event_detail", event_id=event_id)
    event = _event_or_404(event_id)
    # htmx only swaps 2xx answers, so the conflict panel travels as 200 to it and as 409 to a plain form post.
    status = 409 if conflict and not request.htmx else 200
    return render(request, template, {"form": form, "event": event, "conflict": conflict}, status=status)


def _initial(event) -> dict:
    return {
        "title": event.title,
        "description": event.description,
        "location": event.location,
        "starts_at": event.starts_at,
        "capacity": event.capacity,
        "version": event.version,
    }
