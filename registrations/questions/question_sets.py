"""Custom questions per event: what a question is, the answers checked against them, and where a request finds them.

Staff ask questions of six kinds (``KINDS``); a registration carries its answers on both of its copies (never on
the claim), checked here against the list at one version (``QuestionSet``). The registration does not read the
questions: the event page hands them to its form signed (``sign_questions``), an API call finds them in this
process's ``known`` copies (read once when missing), and the seat's own condition pins the version they were
checked against (``shard_condition``), so answers checked against a list that changed meanwhile are refused by
the write itself, never stored (docs/questions.md).

An answer is stored with the question's label as it was answered, so a question edited or removed later still
explains the answers given to it.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core import signing

from registrations.errors import RegistrationError
from registrations.models import Registration
from registrations.questions.models import EventQuestions
from registrations.seating.models import SeatShard
from tems.dynamo import batch_get_models
from tems.text import unsafe_text_problem

KINDS = {"text": "Text", "number": "Number", "single": "One of a list", "multiple": "Any of a list",
         "yesno": "Yes or no", "date": "Date"}
CHOICE_KINDS = ("single", "multiple")
# Bounds that keep a registration's items small: every answer is written on both registration copies (and a
# waiting one's entry), and each copy's size is what its write is billed by. 20 answers of 500 characters stay
# far under DynamoDB's 400 KB per item even in 4-byte characters, and a form of 20 questions is already long.
MAX_QUESTIONS = 20
MAX_LABEL_CHARS = 200
MAX_CHOICES = 20
MAX_CHOICE_CHARS = 100
MAX_TEXT_ANSWER_CHARS = 500
# A number answer: at most 15 significant digits (what a spreadsheet keeps exactly) and below 10^12 in size.
MAX_NUMBER_DIGITS = 15
MAX_NUMBER = Decimal(10) ** 12
QUESTION_ID = re.compile(r"[0-9a-f]{8}")
FIELD_PREFIX = "answer_"
TOKEN_FIELD = "questions"  # the register form's hidden field: the questions it asked, signed
SIGN_SALT = "registrations.questions"
YES, NO = "yes", "no"


@dataclass(frozen=True)
class Question:
    """One question; ``id`` never changes, so answers stay tied to it through edits of its label or choices."""

    id: str
    label: str
    kind: str
    required: bool = False
    choices: tuple[str, ...] = ()
    door: bool = False  # shown on the door screen with the holder's name

    @property
    def field(self) -> str:
        """The form field of its answer (the API names answers by ``id``)."""
        return FIELD_PREFIX + self.id

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "kind": self.kind, "required": self.required,
                "choices": list(self.choices), "door": self.door}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Question:
        return cls(id=str(data["id"]), label=str(data["label"]), kind=str(data["kind"]),
                   required=bool(data.get("required")), choices=tuple(str(c) for c in data.get("choices") or ()),
                   door=bool(data.get("door")))


@dataclass(frozen=True)
class QuestionSet:
    """The event's questions at ``version`` (0: it never had any)."""

    version: int
    questions: tuple[Question, ...] = ()

    def by_id(self) -> dict[str, Question]:
        return {q.id: q for q in self.questions}

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "questions": [q.to_dict() for q in self.questions]}


NO_QUESTIONS = QuestionSet(0)


def new_question_id() -> str:
    return secrets.token_hex(4)


def questions_to_json(questions: tuple[Question, ...] | list[Question]) -> str:
    return json.dumps([q.to_dict() for q in questions], ensure_ascii=False, separators=(",", ":"))


def questions_from_json(text: str | None) -> tuple[Question, ...]:
    return tuple(Question.from_dict(item) for item in json.loads(text or "[]"))


# --- checking a question list (staff) ---------------------------------------------------------------------------

def _text_problem(value: Any, *, limit: int, what: str) -> str | None:
    if not isinstance(value, str):
        return f"{what} must be text."
    if problem := unsafe_text_problem(value):
        return problem
    if not value.strip():
        return f"{what} is required."
    if len(value) > limit:
        return f"{what} is at most {limit} characters."
    return None


def checked_questions(questions: list[Question]) -> tuple[Question, ...]:
    """``questions`` cleaned (labels and choices stripped), or RegistrationError('invalid') naming what is wrong,
    keyed ``question_<id>`` (a new question's id is already assigned)."""
    if len(questions) > MAX_QUESTIONS:
        raise RegistrationError("invalid", f"An event asks at most {MAX_QUESTIONS} questions.",
                                errors={"questions": [f"At most {MAX_QUESTIONS}."]})
    cleaned, errors = [], {}
    for question in questions:
        problems = []
        if not QUESTION_ID.fullmatch(question.id):
            problems.append("Unknown question id.")
        if problem := _text_problem(question.label, limit=MAX_LABEL_CHARS, what="The question"):
            problems.append(problem)
        if question.kind not in KINDS:
            problems.append(f"The kind must be one of: {', '.join(KINDS)}.")
        choices = tuple(" ".join(c.split()) for c in question.choices if isinstance(c, str) and c.strip())
        if question.kind in CHOICE_KINDS:
            if len(choices) < 2:
                problems.append("Give at least two choices, one per line.")
            if len(choices) > MAX_CHOICES:
                problems.append(f"At most {MAX_CHOICES} choices.")
            if len(set(choices)) != len(choices):
                problems.append("Each choice only once.")
            problems += [p for c in choices if (p := _text_problem(c, limit=MAX_CHOICE_CHARS, what="A choice"))]
        else:
            choices = ()
        if problems:
            errors[f"question_{question.id}"] = problems
            continue
        cleaned.append(Question(id=question.id, label=" ".join(question.label.split()), kind=question.kind,
                                required=question.required, choices=choices, door=question.door))
    if errors:
        detail = "; ".join(f"{field}: {' '.join(p)}" for field, p in errors.items())
        raise RegistrationError("invalid", f"Some questions are not valid: {detail}", errors=errors)
    return tuple(cleaned)


# --- answers (students) -----------------------------------------------------------------------------------------

def _missing(value: Any) -> bool:
    return value is None or value == "" or value == [] or (isinstance(value, str) and not value.strip())


def _answer(question: Question, value: Any) -> Any:
    """The stored form of one answer; ValueError with the reason a person can act on."""
    kind = question.kind
    if kind == "text":
        if problem := _text_problem(value, limit=MAX_TEXT_ANSWER_CHARS, what="The answer"):
            raise ValueError(problem)
        return value.strip()
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError("Give a number.")
        try:
            number = Decimal(str(value).strip())
        except InvalidOperation:
            raise ValueError("Give a number, like 3 or 2.5.") from None
        if not number.is_finite() or abs(number) >= MAX_NUMBER or len(number.as_tuple().digits) > MAX_NUMBER_DIGITS:
            raise ValueError(f"Give a number below {MAX_NUMBER:,} with at most {MAX_NUMBER_DIGITS} digits.")
        return format(number.normalize(), "f") if number == number.to_integral() else format(number, "f")
    if kind == "single":
        if not isinstance(value, str) or value not in question.choices:
            raise ValueError("Pick one of the choices.")
        return value
    if kind == "multiple":
        values = value if isinstance(value, list) else [value]
        if any(not isinstance(v, str) or v not in question.choices for v in values) or len(set(values)) != len(values):
            raise ValueError("Pick among the choices, each once.")
        return [c for c in question.choices if c in values]  # in the question's order, whatever the order sent
    if kind == "yesno":
        if value in (True, YES, "on", "true"):
            return YES
        if value in (False, NO, "false"):
            return NO
        raise ValueError("Answer yes or no.")
    if kind == "date":
        if not isinstance(value, str) or len(value.strip()) != 10:
            raise ValueError("Give a date as YYYY-MM-DD.")
        try:
            return date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            raise ValueError("Give a date as YYYY-MM-DD.") from None
    raise ValueError("This question cannot be answered.")


def parse_answers(*, questions: QuestionSet, given: Mapping[str, Any], prefix: str = FIELD_PREFIX) -> str | None:
    """The answers ``given`` (question id -> value) checked against ``questions``, as stored on the registration
    (JSON, ``[{id, label, value}]`` in the questions' order), or None when nothing was asked and nothing given.

    Raises RegistrationError('invalid') naming each question not answered right (``errors`` keyed ``prefix`` +
    id: the form field ``answer_<id>``, or the API's ``answers.<id>``), and any answer to a question the list
    does not have.
    """
    asked = questions.by_id()
    if len(given) > MAX_QUESTIONS:
        raise RegistrationError("invalid", f"At most {MAX_QUESTIONS} answers.",
                                errors={prefix.rstrip("._") or "answers": [f"At most {MAX_QUESTIONS} answers."]})
    errors: dict[str, list[str]] = {}
    for question_id in given:
        if question_id not in asked:
            shown = question_id if len(question_id) <= 40 else question_id[:40] + "…"
            errors[prefix + question_id[:40]] = [f"There is no question {shown!r} for this event."]
    answers = []
    for question in questions.questions:
        value = given.get(question.id)
        if _missing(value):
            if question.required:
                errors[prefix + question.id] = [f"“{question.label}” is required."]
            continue
        try:
            answers.append({"id": question.id, "label": question.label, "value": _answer(question, value)})
        except ValueError as problem:
            errors[prefix + question.id] = [f"“{question.label}”: {problem}"]
    if errors:
        raise RegistrationError("invalid", " ".join(p for problems in errors.values() for p in problems),
                                errors=errors)
    if not answers:
        return None
    return json.dumps(answers, ensure_ascii=False, separators=(",", ":"))


def answers_from_form(questions: QuestionSet, post: Any) -> dict[str, Any]:
    """A page's answers as ``parse_answers`` takes them: a multiple choice is a list, everything else one value."""
    given: dict[str, Any] = {}
    for question in questions.questions:
        if question.field in post:
            given[question.id] = (post.getlist(question.field) if question.kind == "multiple"
                                  else post.get(question.field))
    return given


def form_fields(questions: QuestionSet, *, given: Mapping[str, Any], errors: Mapping[str, list[str]]) -> list[dict]:
    """What the register form shows of each question: its input, the value typed before and what to correct."""
    fields = []
    for question in questions.questions:
        value = given.get(question.id)
        chosen = set(value) if isinstance(value, list) else {value}
        options = {"single": question.choices, "multiple": question.choices, "yesno": (YES, NO)}.get(question.kind)
        fields.append({
            "id": question.id, "name": question.field, "label": question.label, "kind": question.kind,
            "required": question.required, "errors": errors.get(question.field, []),
            "value": value if isinstance(value, str) else "",
            "input_type": {"number": "text", "date": "date"}.get(question.kind, "text"),
            "maxlength": MAX_TEXT_ANSWER_CHARS if question.kind == "text" else 40,
            "options": [{"value": option, "label": option.capitalize() if question.kind == "yesno" else option,
                         "checked": option in chosen, "n": n} for n, option in enumerate(options or ())],
        })
    return fields


def answers_of(text: str | None) -> list[dict[str, Any]]:
    """A registration's stored answers (``[{id, label, value}]``); none for one without."""
    try:
        answers = json.loads(text) if text else []
    except ValueError:
        return []
    return answers if isinstance(answers, list) else []


def answer_text(value: Any) -> str:
    """An answer as a person reads it (a multiple choice joined by commas)."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


# --- where a request finds the questions -----------------------------------------------------------------------

def questions_get(*, event_id: str) -> QuestionSet:
    """The event's questions as stored now (strongly consistent); none for an event that never had any."""
    try:
        item = EventQuestions.get(*EventQuestions.key_for(event_id), consistent_read=True)
    except EventQuestions.DoesNotExist:
        return NO_QUESTIONS
    return QuestionSet(int(item.version), questions_from_json(item.questions))


def door_answers(*, event_id: str, registration_id: str) -> list[dict[str, str]]:
    """The answers of a registration to the questions staff show at the door, as ``[{label, value}]`` in the
    questions' order (the label as it is now): one BatchGetItem of the questions and the event-side copy."""
    items = batch_get_models([(EventQuestions, EventQuestions.key_for(event_id)),
                              (Registration, Registration.event_key_for(event_id, registration_id))])
    stored = next((item for item in items if isinstance(item, EventQuestions)), None)
    copy = next((item for item in items if isinstance(item, Registration)), None)
    if stored is None or copy is None:
        return []
    given = {answer.get("id"): answer.get("value") for answer in answers_of(copy.answers) if isinstance(answer, dict)}
    return [{"label": q.label, "value": answer_text(given[q.id])}
            for q in questions_from_json(stored.questions) if q.door and q.id in given]


def sign_questions(event_id: str, questions: QuestionSet) -> str:
    """The questions as the page rendered them, for a hidden field: the post is checked against exactly these,
    without a read, and the seat's condition refuses it if the event's questions moved on since."""
    return signing.dumps(questions.to_dict(), salt=f"{SIGN_SALT}:{event_id}", compress=True)


def load_signed(token: str | None, event_id: str) -> QuestionSet | None:
    """What ``sign_questions`` signed for this event, or None (missing, forged, or another event's)."""
    if not token:
        return None
    try:
        data = signing.loads(token, salt=f"{SIGN_SALT}:{event_id}")
        return QuestionSet(int(data["version"]), tuple(Question.from_dict(q) for q in data["questions"]))
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        return None


class KnownQuestions:
    """The newest question list this process has seen per event: only a starting guess for an API call. A list
    is immutable at its version, and the write is conditioned on that version, so a stale guess costs a refused
    round and one read, never a wrong answer stored. Bounded, like the routing hints."""

    LIMIT = 2048

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: OrderedDict[str, QuestionSet] = OrderedDict()

    def get(self, event_id: str) -> QuestionSet | None:
        with self._lock:
            return self._known.get(event_id)

    def remember(self, event_id: str, questions: QuestionSet) -> None:
        with self._lock:
            current = self._known.get(event_id)
            if current is None or current.version <= questions.version:
                self._known[event_id] = questions
            self._known.move_to_end(event_id)
            while len(self._known) > self.LIMIT:
                self._known.popitem(last=False)

    def reset(self) -> None:
        with self._lock:
            self._known.clear()


known = KnownQuestions()


def questions_for(event_id: str, *, read: Callable[[], QuestionSet], fresh: bool = False) -> QuestionSet:
    """The event's questions: this process's copy, or ``read()`` (remembered) when it has none or ``fresh``."""
    found = None if fresh else known.get(event_id)
    if found is None:
        found = read()
        known.remember(event_id, found)
    return found


# --- the write's side ------------------------------------------------------------------------------------------

def shard_condition(version: int):
    """The seat's (or lane's) clause: the event's questions are still at the version the answers were checked
    against (an event that never had questions has no ``questions`` on its shards)."""
    return SeatShard.questions.does_not_exist() if version == 0 else SeatShard.questions == version


def questions_changed(raw_item: dict[str, Any] | None, version: int) -> RegistrationError | None:
    """The refusal to raise when a refused seat's (or lane's) image shows other questions than ``version``."""
    if not raw_item:
        return None
    stored = SeatShard.from_raw_data(raw_item).questions
    if int(stored or 0) == version:
        return None
    return RegistrationError(
        "precondition_failed",
        "The questions for this event changed while you were answering: check your answers and register again.",
        questions_version=int(stored or 0))
