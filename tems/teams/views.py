"""Pages of teams: a platform admin creates teams and names their admins; a team admin adds members, sets their
roles and removes them. Who may open each is in tems.permissions.ROUTES."""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from tems.audit import actor_of
from tems.audit import selectors as audit_selectors
from tems.audit.views import log_page
from tems.audit.wording import ACTIONS
from tems.errors import DomainError
from tems.forms import add_error_to_form
from tems.permissions import ROLES, TEAM_ADMIN, access_of
from tems.teams import selectors, services
from tems.teams.forms import MemberAddForm, MemberRoleForm, TeamApprovalForm, TeamCreateForm, TeamRetentionForm


def _list_page(request: HttpRequest, form: TeamCreateForm | None, *, status: int = 200) -> HttpResponse:
    access = access_of(request.user)
    rows = [{"team": team, "role": ROLES.get(access.roles.get(team.pk), ""),
             "manages": access.platform_admin or access.roles.get(team.pk) == TEAM_ADMIN}
            for team in selectors.team_list(user=request.user)]
    return render(request, "teams/team_list.html", {
        "rows": rows,
        "form": form if form is not None else (TeamCreateForm() if access.platform_admin else None),
    }, status=status)


@require_GET
def team_list(request: HttpRequest) -> HttpResponse:
    return _list_page(request, None)


@require_POST
def team_create(request: HttpRequest) -> HttpResponse:
    form = TeamCreateForm(request.POST)
    if form.is_valid():
        try:
            team = services.team_create(team_id=form.cleaned_data["id"], name=form.cleaned_data["name"],
                                        admin_usernames=form.cleaned_data["admins"])
        except DomainError as error:
            add_error_to_form(form, error)
        else:
            messages.success(request, f"Created the team “{team.name}”.")
            return redirect("teams:team_detail", team_id=team.pk)
    return _list_page(request, form, status=400)


def _detail_page(request: HttpRequest, team_id: str, *, add_form: MemberAddForm | None = None,
                 approval_form: TeamApprovalForm | None = None, retention_form: TeamRetentionForm | None = None,
                 error: str | None = None,
                 status: int = 200) -> HttpResponse:
    members = [(member, MemberRoleForm(initial={"role": member.role}, prefix=f"m{member.pk}"))
               for member in selectors.team_members(team_id=team_id)]
    team = selectors.team_get(team_id=team_id)
    if approval_form is None and access_of(request.user).platform_admin:
        approval_form = TeamApprovalForm(team_id=team_id, initial={"needs_approval": team.needs_approval,
                                                                   "overseen_by": team.overseen_by_id or ""})
    return render(request, "teams/team_detail.html", {
        "team": team, "members": members, "roles": ROLES,
        "add_form": add_form or MemberAddForm(), "approval_form": approval_form, "error": error,
        "retention_form": retention_form or TeamRetentionForm(initial={"days": team.audit_retention_days}),
    }, status=status)


@require_GET
def team_detail(request: HttpRequest, team_id: str) -> HttpResponse:
    return _detail_page(request, team_id)


@require_POST
def member_add(request: HttpRequest, team_id: str) -> HttpResponse:
    form = MemberAddForm(request.POST)
    if form.is_valid():
        try:
            member = services.member_add(team_id=team_id, actor=actor_of(request), **form.cleaned_data)
        except DomainError as error:
            add_error_to_form(form, error)
        else:
            messages.success(request, f"Added {member.user.get_username()} as {ROLES[member.role].lower()}.")
            return redirect("teams:team_detail", team_id=team_id)
    return _detail_page(request, team_id, add_form=form, status=400)


@require_POST
def member_role(request: HttpRequest, team_id: str, membership_id: int) -> HttpResponse:
    form = MemberRoleForm(request.POST, prefix=f"m{membership_id}")
    if not form.is_valid():
        return _detail_page(request, team_id, error="Choose one of the roles listed.", status=400)
    try:
        member = services.member_role_set(team_id=team_id, membership_id=membership_id, actor=actor_of(request),
                                          **form.cleaned_data)
    except DomainError as error:
        return _detail_page(request, team_id, error=error.detail, status=error.status)
    messages.success(request, f"{member.user.get_username()} is now {ROLES[member.role].lower()}.")
    return redirect("teams:team_detail", team_id=team_id)


@require_POST
def member_remove(request: HttpRequest, team_id: str, membership_id: int) -> HttpResponse:
    try:
        services.member_remove(team_id=team_id, membership_id=membership_id, actor=actor_of(request))
    except DomainError as error:
        return _detail_page(request, team_id, error=error.detail, status=error.status)
    messages.success(request, "Removed from the team.")
    return redirect("teams:team_detail", team_id=team_id)


@require_POST
def team_approval(request: HttpRequest, team_id: str) -> HttpResponse:
    """A platform admin's setting: whether the team's events need approval, and by which team."""
    form = TeamApprovalForm(request.POST, team_id=team_id)
    if form.is_valid():
        try:
            team = services.team_approval_set(team_id=team_id, actor=actor_of(request), **form.cleaned_data)
        except DomainError as error:
            add_error_to_form(form, error)
        else:
            messages.success(request, f"Events of “{team.name}” now need approval by {team.overseen_by.name}."
                             if team.needs_approval else f"Events of “{team.name}” are published at once.")
            return redirect("teams:team_detail", team_id=team_id)
    return _detail_page(request, team_id, approval_form=form, status=400)


@require_POST
def team_retention(request: HttpRequest, team_id: str) -> HttpResponse:
    """How long the team's audit log keeps an entry."""
    form = TeamRetentionForm(request.POST)
    if form.is_valid():
        try:
            services.team_retention_set(team_id=team_id, days=form.cleaned_data["days"], actor=actor_of(request))
        except DomainError as error:
            add_error_to_form(form, error)
        else:
            messages.success(request, f"The log now keeps entries for {form.cleaned_data['days']} days.")
            return redirect("teams:team_detail", team_id=team_id)
    return _detail_page(request, team_id, retention_form=form, status=400)


# The team's log in two parts: its events' and stock's (DynamoDB), and the team's own changes (Django's database).
TEAM_SECTION = "team"


@require_GET
def team_log(request: HttpRequest, team_id: str) -> HttpResponse:
    """Who changed the team's events and stock, and its members, roles and settings (tems.audit)."""
    team = selectors.team_get(team_id=team_id)
    own = request.GET.get("section") == TEAM_SECTION
    url = reverse("teams:team_log", kwargs={"team_id": team_id})
    if own:
        read = partial(_team_changes, team_id=team_id, page=request.GET.get("page"))
        actions = {name: label for name, label in ACTIONS.items() if name in audit_selectors.TEAM_ACTIONS}
    else:
        read = partial(audit_selectors.team_log, team_id=team_id)
        actions = {name: label for name, label in ACTIONS.items() if name not in audit_selectors.TEAM_ACTIONS}
    return log_page(
        request, heading=f"Log of {team.name}", team=team_id, show_objects=not own,
        intro="Who changed what in the team's events and stock, and in the team itself.",
        crumbs=[("Teams", reverse("teams:team_list")), (team.name, reverse("teams:team_detail",
                                                                           kwargs={"team_id": team_id}))],
        read=read, retention_days=team.audit_retention_days, actions=actions,
        sections=[("Events and stock", url, not own), ("Members and settings", f"{url}?section={TEAM_SECTION}", own)],
        section=TEAM_SECTION if own else "")


def _team_changes(*, team_id: str, page: str | None, actor: str, action: str, cursor: str | None, limit: int):
    return audit_selectors.team_changes(team_id=team_id, actor=actor, action=action, page=page)

