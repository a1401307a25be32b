"""Pages of a person's data (export and erasure) and of an event's answer retention (staff)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from registrations import serializers
from registrations.errors import RegistrationError
from registrations.privacy import selectors, services
from registrations.privacy.forms import EraseForm, RetentionForm
from registrations.views import event_or_404
from tems import accounts
from tems.audit import actor_of
from tems.clock import utcnow
from tems.identity import user_key


@require_GET
@login_required
@never_cache
def personal_data(request: HttpRequest) -> HttpResponse:
    return render(request, "registrations/privacy/personal_data.html",
                  {"form": EraseForm(username=request.user.get_username())})


def export_document(request: HttpRequest) -> dict:
    user_id = user_key(request.user)
    data = selectors.personal_data_read(user_id=user_id)
    return serializers.personal_data_to_dict(user_id=user_id, items=data.items, mails=data.mails, events=data.events,
                                             account=accounts.account_data(user=request.user), exported_at=utcnow())


@require_GET
@login_required
@never_cache
def personal_data_download(request: HttpRequest) -> HttpResponse:
    """The whole export as one JSON file to save."""
    body = json.dumps(export_document(request), cls=DjangoJSONEncoder, ensure_ascii=False, indent=2)
    response = HttpResponse(body.encode(), content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="tems-my-data.json"'
    return response


@require_POST
@login_required
def personal_data_erase(request: HttpRequest) -> HttpResponse:
    form = EraseForm(request.POST, username=request.user.get_username())
    if not form.is_valid():
        return render(request, "registrations/privacy/personal_data.html", {"form": form}, status=400)
    try:
        report = services.personal_data_erase(user=request.user)
    except RegistrationError as error:
        if error.code != "busy":
            return render(request, "registrations/privacy/personal_data.html", {"form": form, "error": error.detail},
                          status=error.status)
        # Recorded and begun: it is finished shortly by the relay, and the account is already closed.
        report = None
    logout(request)
    return render(request, "registrations/privacy/erased.html", {"report": report})


@require_http_methods(["GET", "POST"])
@login_required
@never_cache
def event_retention(request: HttpRequest, event_id: str) -> HttpResponse:
    event = event_or_404(event_id)
    current = selectors.retention_get(event_id=event_id)
    form = RetentionForm(request.POST or None, initial={
        "days": current.days if current else None, "version": current.version if current else None})
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                services.retention_set(event_id=event_id, days=form.cleaned_data["days"],
                                       expected_version=form.cleaned_data["version"],
                                       updated_by=request.user.get_username(), actor=actor_of(request))
            except RegistrationError as error:
                messages.error(request, error.detail)
                return redirect("privacy:event_retention", event_id=event_id)
            messages.success(request, "Saved.")
            return redirect("privacy:event_retention", event_id=event_id)
        status = 400
    return render(request, "registrations/privacy/retention.html",
                  {"event": event, "form": form, "retention": current}, status=status)
