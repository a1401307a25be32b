"""JSON API of registrations (session auth, CSRF via X-CSRFToken, problem+json errors): register, list the
caller's own, cancel one."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from registrations import selectors, serializers, services
from registrations.checkins import selectors as checkin_selectors
from registrations.errors import RegistrationError
from registrations.questions import question_sets
from registrations.registration_metrics import count_registration
from tems.api import api_view, json_response, parse_json_object
from tems.idempotency import key_from_request, request_fingerprint
from tems.idempotency.record import replay_if_stored
from tems.identity import user_key
from tems.pagination import next_page_url, page_args
from tems.ratelimit import counts_own_writes


@api_view("POST")
@counts_own_writes
def registration_create(request: HttpRequest, event_id: str) -> HttpResponse:
    """Register the caller for the event; exactly once per student, replayed per Idempotency-Key.

    The body is optional: ``{"answers": {"<question id>": value}}`` answers the event's questions (400 naming
    each question answered wrong or left out while required)."""
    user_id = user_key(request.user)
    given = _answers_given(request)
    key, fingerprint = key_from_request(request), request_fingerprint(request)

    def read() -> question_sets.QuestionSet:
        return question_sets.questions_get(event_id=event_id)

    # This process's copy of the questions, if it has one; with answers and none, read them (no answer can be
    # checked against nothing). A stale copy is refused by the seat's condition: read afresh, check, once more.
    asked = question_sets.questions_for(event_id, read=read) if given else (question_sets.known.get(event_id)
                                                                       or question_sets.NO_QUESTIONS)
    for last in (False, True):
        try:
            answers = question_sets.parse_answers(questions=asked, given=given, prefix=ANSWER_FIELD)
        except RegistrationError:
            # A retry of a tap that was answered, checked now against questions changed since: the first answer.
            if (stored := replay_if_stored(user_id=user_id, key=key, fingerprint=fingerprint)) is not None:
                return stored.to_http(replayed=True)
            raise
        try:
            outcome = services.registration_create(
                event_id=event_id, user_id=user_id, user_name=request.user.get_username(), idempotency_key=key,
                fingerprint=fingerprint, questions_version=asked.version, answers=answers,
                write_limit=settings.TEMS_WRITE_RATE,
            )
        except RegistrationError as error:
            if error.code != "precondition_failed" or last:
                raise
            asked = question_sets.questions_for(event_id, read=read, fresh=True)
            continue
        count_registration(outcome)
        return outcome.response.to_http(replayed=outcome.replayed)
    raise AssertionError("unreachable: the last round returns or raises")


ANSWER_FIELD = "answers."


def _answers_given(request: HttpRequest) -> dict:
    # A registration asked nothing of its body before questions existed: a client that sends none, or a form
    # body, still registers, and only a JSON body is read for answers.
    if request.content_type != "application/json" or not request.body:
        return {}
    data = parse_json_object(request)
    unknown = sorted(set(data) - {"answers"})
    if unknown:
        raise RegistrationError("invalid", f"Unknown fields: {', '.join(name[:40] for name in unknown[:5])}.",
                                errors={name[:40]: ["Unknown field."] for name in unknown[:5]})
    given = data.get("answers") or {}
    if not isinstance(given, dict):
        raise RegistrationError("invalid", "answers must be an object of question id to answer.",
                                errors={"answers": ["Must be an object."]})
    return given



@api_view("GET")
def my_registrations(request: HttpRequest) -> HttpResponse:
    """The caller's registrations, a page at a time: ``{"registrations": [...], "next": url | null}``."""
    page = selectors.registration_page(user_id=user_key(request.user), **page_args(request),
                                       checked_in=checkin_selectors.checked_in_registrations)
    # A read draws each ticket's QR code inline (cached per ticket); a registration's own answer only links it.
    return json_response({"registrations": [serializers.with_qr_svg(row) for row in page.items],
                          "next": next_page_url(request, page)})


@api_view("DELETE")
def registration_cancel(request: HttpRequest, registration_id: str) -> HttpResponse:
    """Cancel one of the caller's registrations once per Idempotency-Key; someone else's is 404."""
    user_id = user_key(request.user)
    outcome = services.registration_cancel_once(
        user_id=user_id, registration_id=registration_id, idempotency_key=key_from_request(request),
        fingerprint=request_fingerprint(request),
    )
    return outcome.response.to_http(replayed=outcome.replayed)

