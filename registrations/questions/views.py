"""Staff pages of an event's custom questions: the list as one form, saved as one version-checked edit.

Thin like the other pages: the form's rows are parsed here, the save and its merge are
``question_services.questions_edit``'s. The form carries the version it was opened at and the questions it showed
(signed, tems.merge), so a save that meets someone else's is merged onto theirs instead of overwriting it.
"""

from __future__ import annotations

from dataclasses import replace

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from registrations import selectors
from registrations.errors import RegistrationError
from registrations.questions import question_sets
from registrations.questions import services as question_services
from registrations.questions.question_sets import KINDS, MAX_QUESTIONS, QUESTION_ID, Question, QuestionSet
from tems.decorators import staff_required
from tems.http import after_save
from tems.merge import load_base, sign_base

TEMPLATE = "registrations/questions_form.html"
NEW = "new"


def _scope(event_id: str, version: int) -> str:
    return f"questions:{event_id}:v{version}"


def _row(prefix: str, post) -> Question:
    return Question(id=prefix, label=post.get(f"label-{prefix}", ""), kind=post.get(f"kind-{prefix}", ""),
                    required=bool(post.get(f"required-{prefix}")), door=bool(post.get(f"door-{prefix}")),
                    choices=tuple(post.get(f"choices-{prefix}", "").splitlines()))


def _posted(post) -> list[Question]:
    """The questions the form asks to keep, in its order, and a new one if its label was filled in."""
    ids = [qid for qid in post.getlist("question") if QUESTION_ID.fullmatch(qid)][:MAX_QUESTIONS]
    kept = [_row(qid, post) for qid in dict.fromkeys(ids) if not post.get(f"remove-{qid}")]
    if post.get(f"label-{NEW}", "").strip():
        kept.append(replace(_row(NEW, post), id=post.get("new_id") or ""))
    return kept


def _rows(items: list[Question], errors: dict[str, list[str]], new_id: str) -> list[dict]:
    rows = [{"prefix": q.id, "question": q, "choices": "\n".join(q.choices),
             "errors": errors.get(f"question_{q.id}", [])} for q in items if q.id != new_id]
    new = next((q for q in items if q.id == new_id), None)
    rows.append({"prefix": NEW, "question": new, "choices": "\n".join(new.choices) if new else "", "new": True,
                 "errors": errors.get(f"question_{new_id}", [])})
    return rows


def _page(request: HttpRequest, event, *, version: int, base: dict, shown: list[Question],
          errors: dict | None = None, conflict: dict | None = None, problem: str | None = None,
          status: int = 200) -> HttpResponse:
    """The form of ``shown`` questions, standing on ``version`` whose questions were ``base`` (canonical)."""
    new_id = request.POST.get("new_id") if request.method == "POST" else None
    new_id = new_id if new_id and QUESTION_ID.fullmatch(new_id) else question_sets.new_question_id()
    context = {
        "event": event, "kinds": KINDS, "version": version, "new_id": new_id, "conflict": conflict, "problem": problem,
        "base": sign_base(base, scope=_scope(event.event_id, version)),
        "rows": _rows(shown, errors or {}, new_id), "max_questions": MAX_QUESTIONS,
    }
    return render(request, TEMPLATE, context, status=status)


def _stored_page(request: HttpRequest, event, *, status: int = 200) -> HttpResponse:
    stored = question_sets.questions_get(event_id=event.event_id)
    return _page(request, event, version=stored.version, base=question_services.canonical(stored.questions),
                 shown=list(stored.questions), status=status)


@require_http_methods(["GET", "POST"])
@staff_required
def event_questions(request: HttpRequest, event_id: str) -> HttpResponse:
    try:
        event = selectors.event_get(event_id=event_id)
    except RegistrationError as error:
        raise Http404(error.detail) from None
    if request.method == "GET":
        return _stored_page(request, event)
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        version = -1
    mine = _posted(request.POST)
    base = load_base(request.POST.get("base", ""), scope=_scope(event_id, version), fields=()) if version >= 0 else None
    try:
        outcome = question_services.questions_edit(event_id=event_id, expected_version=max(version, 0), base=base,
                                                   mine=mine, updated_by=request.user.get_username())
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
            return _page(request, event, version=current.version, shown=shown, status=409,
                         base=question_services.canonical(current.questions),
                         conflict={"detail": error.detail, "clashes": clashes})
        if error.code == "invalid":
            return _page(request, event, version=max(version, 0), base=base or {}, shown=mine, errors=error.errors,
                         problem=error.detail, status=400)
        if error.code == "not_found":
            raise Http404(error.detail) from None
        messages.error(request, error.detail)
        return _stored_page(request, event, status=error.status)
    note = " Kept the changes saved meanwhile by someone else." if outcome.merge else ""
    messages.success(request, f"Saved the questions.{note}")
    return after_save(request, reverse("registrations:event_questions", kwargs={"event_id": event_id}))
