"""The audit log's page, shared by an event's log (registrations.events.views.event_log) and a team's log
(tems.teams.views.team_log): the filters, a page of entries in words, "Older entries" by htmx or by link."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from tems.audit import selectors
from tems.audit.wording import ACTIONS
from tems.errors import DomainError
from tems.pagination import next_page_url, page_args


def log_page(request: HttpRequest, *, heading: str, intro: str, crumbs: list[tuple[str, str]],
             read: Callable[..., Any], team: str | None, retention_days: int, show_objects: bool = False,
             actions: dict[str, str] = ACTIONS, sections: list[tuple[str, str, bool]] | None = None,
             section: str = "") -> HttpResponse:
    """One page of the log ``read(actor=, action=, cursor=, limit=)`` returns; a bad filter, limit or cursor is a
    400 with the reason, never a 5xx."""
    actor, action = request.GET.get("actor") or "", request.GET.get("action") or ""
    context = {"heading": heading, "intro": intro, "crumbs": crumbs, "actions": list(actions.items()),
               "actor": actor, "action": action, "filtered": bool(actor or action), "show_objects": show_objects,
               "retention_days": retention_days, "sections": sections, "section": section,
               "continued": bool(request.GET.get("cursor") or request.GET.get("page"))}
    status = 200
    try:
        page = read(actor=actor, action=action, **page_args(request))
    except DomainError as error:
        context.update(error=error.detail, rows=[], people=selectors.people_of_team(team), next_url=None)
        status = 400
    else:
        items = list(page)
        context.update(rows=selectors.log_rows(items), next_url=_next_url(request, page),
                       people=selectors.filter_people(items, team=team))
    template = "audit/log.html"
    if request.htmx and context["continued"] and status == 200:
        template += "#log-page"
    return render(request, template, context, status=status)


def _next_url(request: HttpRequest, page: Any) -> str | None:
    if hasattr(page, "next_cursor"):
        return next_page_url(request, page)
    if not page.has_next():  # a Django page (the team's own changes)
        return None
    params = request.GET.copy()
    params["page"] = page.next_page_number()
    return f"{request.path}?{params.urlencode()}"
