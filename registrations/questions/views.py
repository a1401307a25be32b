"""Staff pages of an event's custom questions: the list as one formset, saved as one version-checked edit.

Thin like the other pages: the rows are the formset's (registrations.questions.forms), the save and its merge are
``question_services.questions_edit``'s. The form carries the version it was opened at and the questions it showed
(signed, tems.merge), so a save that meets someone else's is merged onto theirs instead of overwriting it. Moving a
row, adding one and the preview re-show the form and save nothing.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from registrations.errors import RegistrationError
from registrations.questions import forms as question_forms
from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import MAX_QUESTIONS, QuestionSet
from registrations.views import event_or_404
from tems.audit import actor_of
from tems.http import after_save
from tems.merge import load_base, sign_base

TEMPLATE = "registrations/questions_form.html"


def _scope(event_id: str, version: int) -> str:
    return f"questions:{event_id}:v{version}"


def _invalid(request: HttpRequest, event, *, version: int, base: dict | None, editor,
             error: RegistrationError) -> HttpResponse:
    """The rows again, each with what is wrong with it; nothing saved."""
    rest = question_forms.attach_errors(editor, error.errors)
    return _page(request, event, version=max(version, 0), base=base or {}, editor=editor, status=400,
                 problem=" ".join(rest) or "Some questions are not valid: see below.")


def _page(request: HttpRequest, event, *, version: int, base: dict, editor, conflict: dict | None = None,
          problem: str | None = None, preview: list[dict] | None = None, status: int = 200) -> HttpResponse:
    """The editor's ``rows``, standing on ``version`` whose questions were ``base`` (canonical)."""
    context = {
        "event": event, "version": version, "conflict": conflict, "problem": problem, "editor": editor,
        "base": sign_base(base, scope=_scope(event.event_id, version)), "max_questions": MAX_QUESTIONS,
        "preview": preview,
    }
    return render(request, TEMPLATE, context, status=status)


def _stored_page(request: HttpRequest, event, *, status: int = 200) -> HttpResponse:
    stored = question_sets.questions_get(event_id=event.event_id)
    return _page(request, event, version=stored.version, base=question_services.canonical(stored.questions),
                 editor=question_forms.editor(stored.questions), status=status)


@require_http_methods(["GET", "POST"])
@login_required
def event_questions(request: HttpRequest, event_id: str) -> HttpResponse:
    event = event_or_404(event_id)
    if request.method == "GET":
        return _stored_page(request, event)
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        version = -1
    base = load_base(request.POST.get("base", ""), scope=_scope(event_id, version), fields=()) if version >= 0 else None
    editor = question_forms.posted_editor(request.POST)
    mine = question_forms.posted_questions(editor, kept=base or ())
    action = question_forms.editor_action(request.POST)
    if action is not None and action != question_forms.PREVIEW:  # a row moved or added: the raw rows, as typed
        return _page(request, event, version=max(version, 0), base=base or {},
                     editor=question_forms.rearranged(editor, action))
    if mine is None:
        return _page(request, event, version=max(version, 0), base=base or {}, editor=editor, status=400,
                     problem="Some questions are not valid: see below.")
    if action == question_forms.PREVIEW:
        try:
            preview = question_forms.preview_fields(mine)
        except RegistrationError as error:
            return _invalid(request, event, version=version, base=base, editor=editor, error=error)
        return _page(request, event, version=max(version, 0), base=base or {}, editor=editor, preview=preview)
    try:
        outcome = question_services.questions_edit(event_id=event_id, expected_version=max(version, 0), base=base,
                                                   mine=mine, updated_by=request.user.get_username(),
                                                   actor=actor_of(request))
    except RegistrationError as error:
        if error.code == "conflict" and "merge" in error.extra:
            current: QuestionSet = error.extra["current"]
            merge = error.extra["merge"]
            theirs = current.by_id()
            clashes = [{"theirs": theirs.get(c.field), "mine": next((q for q in mine if q.id == c.field), None)}
                       for c in merge.clashes]
            # Nothing was written: the form now stands on their version, with my side of each clash in it, so a
            # second save keeps mine and anything else merges as before.
            shown = question_services.merged_list(merge, theirs=list(theirs), mine=[q.id for q in mine])
            return _page(request, event, version=current.version, editor=question_forms.editor(shown), status=409,
                         base=question_services.canonical(current.questions),
                         conflict={"detail": error.detail, "clashes": clashes})
        if error.code == "invalid":
            return _invalid(request, event, version=version, base=base, editor=editor, error=error)
        if error.code == "not_found":
            raise Http404(error.detail) from None
        messages.error(request, error.detail)
        return _stored_page(request, event, status=error.status)
    note = " Kept the changes saved meanwhile by someone else." if outcome.merge else ""
    messages.success(request, f"Saved the questions.{note}")
    return after_save(request, reverse("registrations:event_questions", kwargs={"event_id": event_id}))
