"""JSON API of an event's custom questions (problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations import selectors
from registrations.errors import RegistrationError
from registrations.questions import question_sets
from registrations.questions import services as question_services
from tems.api import api_view, json_response, parse_json_object
from tems.audit import actor_of


@api_view("GET", "PUT")
def event_questions(request: HttpRequest, event_id: str) -> HttpResponse:
    """``GET`` the event's questions and their version (what a registration's answers answer); its managers:
    ``PUT`` ``{"version": n, "questions": [...]}`` replaces them if they are still at ``n`` (409 with the stored ones if
    not: nothing written). A question without an ``id`` is new."""
    selectors.event_get(event_id=event_id, consistent=False)  # 404 for an unknown event
    if request.method == "GET":
        # Remembered: this process then checks the client's answers against them without reading them again.
        return json_response(question_sets.questions_for(event_id, fresh=True, read=lambda: question_sets.questions_get(
            event_id=event_id)).to_dict())
    data = parse_json_object(request)
    version, items = data.get("version"), data.get("questions")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise RegistrationError("invalid", "version must be the whole number you read.",
                                errors={"version": ["Must be a whole number, 0 or more."]})
    if not isinstance(items, list) or len(items) > question_sets.MAX_QUESTIONS:
        raise RegistrationError("invalid", f"questions must be a list of at most {question_sets.MAX_QUESTIONS}.",
                                errors={"questions": [f"A list of at most {question_sets.MAX_QUESTIONS}."]})
    try:
        saved = question_services.questions_update(event_id=event_id, expected_version=version, updated_by=
                                          request.user.get_username(), questions=[_question(i) for i in items],
                                          actor=actor_of(request))
    except RegistrationError as error:
        if error.code == "conflict" and "current" in error.extra:
            raise RegistrationError("conflict", error.detail, current=error.extra["current"].to_dict()) from None
        raise
    return json_response(saved.to_dict())


def _question(item: object) -> question_sets.Question:
    if not isinstance(item, dict):
        raise RegistrationError("invalid", "Each question must be an object.",
                                errors={"questions": ["Each must be an object."]})
    choices = item.get("choices") or []
    return question_sets.Question(
        id=item["id"] if isinstance(item.get("id"), str) else question_sets.new_question_id(),
        label=item.get("label") if isinstance(item.get("label"), str) else "",
        kind=item.get("kind") if isinstance(item.get("kind"), str) else "",
        required=item.get("required") is True, door=item.get("door") is True,
        choices=tuple(c if isinstance(c, str) else "" for c in choices) if isinstance(choices, list) else ("",))

