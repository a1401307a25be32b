"""The questions editor: a formset of question rows, on the questions page and on the New event form alike.

Each row carries its question's id (a new row's is made when the row is first shown), so a row keeps its id
through previews, reorderings and a save that meets someone else's: answers stay tied to it. A row with no
question typed that is not one of the stored questions is left out; everything else is checked by
``question_sets.checked_questions``, whose messages the rows show.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms

from registrations.questions.question_sets import (
    KINDS,
    MAX_LABEL_CHARS,
    MAX_QUESTIONS,
    QUESTION_ID,
    Question,
    QuestionSet,
    checked_questions,
    form_fields,
    new_question_id,
)

PREFIX = "questions"
# Empty rows offered under the questions: a few questions are typed in one go, "Add a question" offers more.
BLANK_ROWS = 2
# Buttons of the editor that change the rows shown and save nothing.
MOVE, ADD, PREVIEW = "question_move", "question_add", "question_preview"


class QuestionForm(forms.Form):
    """One question's row. The kind is a plain field with a select: a kind that is not offered gets the
    service's message, the one the API gives, rather than a second wording of it."""

    id = forms.CharField(widget=forms.HiddenInput, required=False)
    label = forms.CharField(required=False, label="Question", widget=forms.TextInput(attrs={
        "maxlength": MAX_LABEL_CHARS}))
    kind = forms.CharField(label="Kind of answer", widget=forms.Select(choices=list(KINDS.items()),
                                                                       attrs={"class": "question-kind"}))
    choices = forms.CharField(required=False, label="Choices, one per line", strip=False,
                              widget=forms.Textarea(attrs={"rows": 3}))
    required = forms.BooleanField(required=False)
    door = forms.BooleanField(required=False, label="Show at the door")
    remove = forms.BooleanField(required=False, label="Remove this question (answers already given are kept)")

    def question(self) -> Question:
        data = self.cleaned_data
        return Question(id=data["id"], label=data["label"], kind=data["kind"], required=data["required"],
                        door=data["door"], choices=tuple(data["choices"].splitlines()))


QuestionFormSet = forms.formset_factory(QuestionForm, extra=0, max_num=MAX_QUESTIONS + BLANK_ROWS,
                                        absolute_max=MAX_QUESTIONS + BLANK_ROWS, validate_max=True)


def _initial(question: Question) -> dict[str, Any]:
    return {"id": question.id, "label": question.label, "kind": question.kind, "required": question.required,
            "door": question.door, "choices": "\n".join(question.choices)}


def _blank() -> dict[str, Any]:
    return {"id": new_question_id(), "kind": "text"}


def editor(questions: Iterable[Question], *, blanks: int = BLANK_ROWS) -> QuestionFormSet:
    """The rows of ``questions`` and ``blanks`` empty ones (fewer when the list is nearly full)."""
    rows = [_initial(q) for q in questions]
    rows += [_blank() for _ in range(max(0, min(blanks, MAX_QUESTIONS - len(rows))))]
    return QuestionFormSet(initial=rows, prefix=PREFIX)


def has_editor(post) -> bool:
    """Whether a post carries the editor's rows (its management form)."""
    return f"{PREFIX}-TOTAL_FORMS" in post


def posted_editor(data) -> QuestionFormSet:
    return QuestionFormSet(data, prefix=PREFIX)


def _rows(formset: QuestionFormSet) -> list[dict[str, Any]]:
    """Every row as posted, valid or not (a row's raw values, for showing the rows again)."""
    rows = []
    for form in formset.forms:
        row = {name: form[name].value() for name in ("id", "label", "kind", "choices")}
        row.update({name: bool(form[name].value()) for name in ("required", "door", "remove")})
        rows.append(row)
    return rows


def posted_questions(formset: QuestionFormSet, *, kept: Iterable[str] = ()) -> list[Question] | None:
    """The questions the rows ask to keep, in their order, or None if a row is not even readable (the formset
    shows why). A row with no question typed is left out unless its id is in ``kept`` (a stored question:
    emptying it is a mistake the checks name, not a removal)."""
    if not formset.is_valid():
        return None
    kept = set(kept)
    questions = []
    for form in formset.forms:
        question = form.question()
        if form.cleaned_data["remove"] or (not question.label.strip() and question.id not in kept):
            continue
        questions.append(question)
    return questions


def rearranged(formset: QuestionFormSet, action: str) -> QuestionFormSet:
    """The rows as posted after ``action``: a row moved up or down (``<index>:up|down``) or one more empty row;
    a fresh, unbound editor (nothing is saved, nothing shown as an error)."""
    rows = _rows(formset)
    if action.startswith(MOVE):
        index, _, way = action.removeprefix(MOVE + "=").partition(":")
        if index.isdigit():
            n = int(index)
            other = n - 1 if way == "up" else n + 1
            if 0 <= n < len(rows) and 0 <= other < len(rows):
                rows[n], rows[other] = rows[other], rows[n]
    elif action == ADD and len(rows) < MAX_QUESTIONS + BLANK_ROWS:
        rows.append(_blank())
    for row in rows:
        if not QUESTION_ID.fullmatch(str(row.get("id") or "")):
            row["id"] = new_question_id()
    return QuestionFormSet(initial=rows, prefix=PREFIX)


def editor_action(post) -> str | None:
    """Which of the editor's own buttons was pressed (``move=<index>:<way>``, add, preview), if any."""
    if MOVE in post:
        return f"{MOVE}={post[MOVE]}"
    if ADD in post:
        return ADD
    if PREVIEW in post:
        return PREVIEW
    return None


def attach_errors(formset: QuestionFormSet, errors: dict[str, list[str]]) -> list[str]:
    """The service's problems (keyed ``question_<id>``) on the rows they are about; those about no row back."""
    rest = []
    by_id = {str(form["id"].value()): form for form in formset.forms}
    for key, problems in errors.items():
        form = by_id.get(key.removeprefix("question_"))
        if form is None:
            rest += problems
            continue
        for problem in problems:
            form.add_error(None, problem)
    return rest


def preview_fields(questions: list[Question]) -> list[dict]:
    """The register form's fields for ``questions`` as a student will see them. Raises RegistrationError
    'invalid' as a save of them would."""
    return form_fields(QuestionSet(0, checked_questions(questions)), given={}, errors={})
