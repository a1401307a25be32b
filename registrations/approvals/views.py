"""The approvers' page: the drafts waiting for them, each with one "Publish" tap (phone first, works without
JavaScript). Who may open it and publish is tems.permissions' (APPROVALS, EVENT_APPROVE)."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from registrations.approvals import selectors, services
from tems.audit import actor_of
from tems.errors import DomainError
from tems.http import after_save
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key
from tems.teams.selectors import team_names

PAGE = "registrations/approvals.html"


def _page(request: HttpRequest, *, problem: str | None = None, status: int = 200) -> HttpResponse:
    waiting, own = selectors.drafts_for(user=request.user)
    names = team_names(event.team for event in waiting + own)
    rows = [{"event": event, "team_name": names.get(event.team, ""), "key": str(uuid.uuid4()),
             "back_key": str(uuid.uuid4())} for event in waiting]
    own_rows = [{"event": event, "team_name": names.get(event.team, "")} for event in own]
    return render(request, PAGE, {"rows": rows, "own_rows": own_rows, "problem": problem}, status=status)


@require_GET
@never_cache  # Back must not offer a Publish that someone else has already tapped
def approval_list(request: HttpRequest) -> HttpResponse:
    return _page(request)


@require_POST
def event_publish(request: HttpRequest, draft_id: str) -> HttpResponse:
    try:
        outcome = services.event_publish_once(
            event_id=draft_id, user_id=user_key(request.user), published_by=approver_name(request.user),
            idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request),
            actor=actor_of(request))
    except DomainError as error:
        if error.code == "not_found":
            raise Http404(error.detail) from None
        return _page(request, problem=error.detail, status=error.status)
    if not outcome.replayed:
        messages.success(request, "Published: students can now find it and register.")
    return after_save(request, reverse("registrations:approval_list"))


@require_POST
def event_send_back(request: HttpRequest, draft_id: str) -> HttpResponse:
    try:
        outcome = services.event_send_back_once(
            event_id=draft_id, user_id=user_key(request.user), sent_back_by=approver_name(request.user),
            note=request.POST.get("note", ""), idempotency_key=key_from_request(request),
            fingerprint=request_fingerprint(request), actor=actor_of(request))
    except DomainError as error:
        if error.code == "not_found":
            raise Http404(error.detail) from None
        return _page(request, problem=error.detail, status=error.status)
    if not outcome.replayed:
        messages.success(request, "Sent back to its team with your note: it stays a draft.")
    return after_save(request, reverse("registrations:approval_list"))


def approver_name(user) -> str:
    """The name a refused approver is told ("Already published by …"): the person's full name, else username."""
    return user.get_full_name() or user.get_username()
