"""JSON API of the registrations app (session auth, CSRF via X-CSRFToken, problem+json errors)."""

from django.http import HttpRequest, HttpResponse

from registrations import attendees, questions, selectors, services
from registrations.errors import RegistrationError
from registrations.forms import EventForm, MessageForm
from registrations.metrics import count_registration
from registrations.services import messages
from tems.api import api_view, json_response, parse_form, parse_json_object
from tems.idempotency import key_from_request, request_fingerprint
from tems.idempotency.record import replay_if_stored
from tems.identity import user_key
from tems.pagination import next_page_url, page_args


@api_view("GET", "POST")
def events(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _event_create(request)
    # Upcoming events, soonest first; ``?past=1`` for past events, most recent first. ``?cursor=`` pages on.
    page = selectors.event_page(past=request.GET.get("past") == "1", **page_args(request))
    return json_response({"events": [selectors.event_to_dict(e) for e in page],
                          "next": next_page_url(request, page)})


def _event_create(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise RegistrationError("forbidden", "Only staff may create events.")
    form = parse_form(request, EventForm, RegistrationError)
    key = key_from_request(request)
    user_id = user_key(request.user)
    outcome = services.event_create_once(
        **form.cleaned_data, user_id=user_id, created_by=request.user.get_username(), idempotency_key=key,
        fingerprint=request_fingerprint(request),
    )
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("GET")
def event_detail(request: HttpRequest, event_id: str) -> HttpResponse:
    return json_response(selectors.event_to_dict(selectors.event_get(event_id=event_id)))


@api_view("POST")
def registration_create(request: HttpRequest, event_id: str) -> HttpResponse:
    """Register the caller for the event; exactly once per student, replayed per Idempotency-Key.

    The body is optional: ``{"answers": {"<question id>": value}}`` answers the event's questions (400 naming
    each question answered wrong or left out while required)."""
    user_id = user_key(request.user)
    given = _answers_given(request)
    key, fingerprint = key_from_request(request), request_fingerprint(request)

    def read() -> questions.QuestionSet:
        return questions.questions_get(event_id=event_id)

    # This process's copy of the questions, if it has one; with answers and none, read them (no answer can be
    # checked against nothing). A stale copy is refused by the seat's condition: read afresh, check, once more.
    asked = questions.questions_for(event_id, read=read) if given else (questions.known.get(event_id)
                                                                       or questions.NO_QUESTIONS)
    for last in (False, True):
        try:
            answers = questions.parse_answers(questions=asked, given=given, prefix=ANSWER_FIELD)
        except RegistrationError:
            # A retry of a tap that was answered, checked now against questions changed since: the first answer.
            if (stored := replay_if_stored(user_id=user_id, key=key, fingerprint=fingerprint)) is not None:
                return stored.to_http(replayed=True)
            raise
        try:
            outcome = services.registration_create(
                event_id=event_id, user_id=user_id, user_name=request.user.get_username(), idempotency_key=key,
                fingerprint=fingerprint, questions_version=asked.version, answers=answers,
            )
        except RegistrationError as error:
            if error.code != "precondition_failed" or last:
                raise
            asked = questions.questions_for(event_id, read=read, fresh=True)
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


@api_view("GET", "PUT")
def event_questions(request: HttpRequest, event_id: str) -> HttpResponse:
    """``GET`` the event's questions and their version (what a registration's answers answer); staff: ``PUT``
    ``{"version": n, "questions": [...]}`` replaces them if they are still at ``n`` (409 with the stored ones if
    not: nothing written). A question without an ``id`` is new."""
    if request.method == "PUT" and not request.user.is_staff:
        raise RegistrationError("forbidden", "Only staff may change an event's questions.")
    selectors.event_get(event_id=event_id, consistent=False, with_seats=False)  # 404 for an unknown event
    if request.method == "GET":
        # Remembered: this process then checks the client's answers against them without reading them again.
        return json_response(questions.questions_for(event_id, fresh=True, read=lambda: questions.questions_get(
            event_id=event_id)).to_dict())
    data = parse_json_object(request)
    version, items = data.get("version"), data.get("questions")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise RegistrationError("invalid", "version must be the whole number you read.",
                                errors={"version": ["Must be a whole number, 0 or more."]})
    if not isinstance(items, list) or len(items) > questions.MAX_QUESTIONS:
        raise RegistrationError("invalid", f"questions must be a list of at most {questions.MAX_QUESTIONS}.",
                                errors={"questions": [f"A list of at most {questions.MAX_QUESTIONS}."]})
    try:
        saved = services.questions_update(event_id=event_id, expected_version=version, updated_by=
                                          request.user.get_username(), questions=[_question(i) for i in items])
    except RegistrationError as error:
        if error.code == "conflict" and "current" in error.extra:
            raise RegistrationError("conflict", error.detail, current=error.extra["current"].to_dict()) from None
        raise
    return json_response(saved.to_dict())


def _question(item: object) -> questions.Question:
    if not isinstance(item, dict):
        raise RegistrationError("invalid", "Each question must be an object.",
                                errors={"questions": ["Each must be an object."]})
    choices = item.get("choices") or []
    return questions.Question(
        id=item["id"] if isinstance(item.get("id"), str) else questions.new_question_id(),
        label=item.get("label") if isinstance(item.get("label"), str) else "",
        kind=item.get("kind") if isinstance(item.get("kind"), str) else "",
        required=item.get("required") is True, door=item.get("door") is True,
        choices=tuple(c if isinstance(c, str) else "" for c in choices) if isinstance(choices, list) else ("",))


@api_view("GET")
def my_registrations(request: HttpRequest) -> HttpResponse:
    """The caller's registrations, a page at a time: ``{"registrations": [...], "next": url | null}``."""
    page = selectors.registration_page(user_id=user_key(request.user), **page_args(request))
    # A read draws each ticket's QR code inline (cached per ticket); a registration's own answer only links it.
    return json_response({"registrations": [selectors.with_qr_svg(row) for row in page.items],
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


@api_view("GET", staff=True)
def attendee_list(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: the event's attendees by name, ``?status=``, ``?q=<username prefix>``, ``?cursor=``."""
    # 404 for an unknown event, not an empty list
    event = selectors.event_get(event_id=event_id, consistent=False, with_seats=False)
    page = attendees.attendee_page(event_id=event_id, status=request.GET.get("status"),
                                   search=request.GET.get("q"), layout=event.registration_layout,
                                   **page_args(request))
    return json_response({"attendees": page.items, "next": next_page_url(request, page)})


@api_view("GET", "POST", staff=True)
def event_messages(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: ``POST`` ``{audience, subject, body}`` with an Idempotency-Key sends a message to the event's
    attendees once (202, ``Location`` of its progress); ``GET`` lists the event's messages and reminders, newest
    first, a page at a time (``?cursor=&limit=``, ``next``)."""
    if request.method == "GET":
        selectors.event_get(event_id=event_id, consistent=False, with_seats=False)  # 404 for an unknown event
        page = selectors.message_list(event_id=event_id, **page_args(request))
        return json_response({"messages": [messages.message_to_dict(m) for m in page],
                              "next": next_page_url(request, page)})
    form = parse_form(request, MessageForm, RegistrationError)
    outcome = messages.message_send_once(
        event_id=event_id, user_id=user_key(request.user), created_by=request.user.get_username(),
        idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request), **form.cleaned_data)
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("POST", staff=True)
def event_cancel(request: HttpRequest, event_id: str) -> HttpResponse:
    """Staff: cancel the event once per Idempotency-Key (200); a cancelled event answers the same 200 to any key
    and sends nothing again. Its notice's progress is at ``notice``."""
    outcome = services.event_cancel_once(
        event_id=event_id, user_id=user_key(request.user), cancelled_by=request.user.get_username(),
        idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request))
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("GET", staff=True)
def message_detail(request: HttpRequest, event_id: str, message_id: str) -> HttpResponse:
    """Staff: a message's progress: how many mails its fan-out queued so far, and whether it is done."""
    return json_response(messages.message_to_dict(selectors.message_get(event_id=event_id, message_id=message_id)))


@api_view("POST")
def offer_accept(request: HttpRequest, offer_id: str) -> HttpResponse:
    """Take the seat offered to the caller, once per Idempotency-Key; 409 ``offer_expired`` after its end."""
    outcome = services.offer_accept(user_id=user_key(request.user), registration_id=offer_id,
                                    idempotency_key=key_from_request(request), fingerprint=request_fingerprint(request))
    return outcome.response.to_http(replayed=outcome.replayed)


@api_view("POST")
def offer_decline(request: HttpRequest, offer_id: str) -> HttpResponse:
    """Give the offered seat up (it goes to the next in line at once), once per Idempotency-Key."""
    outcome = services.offer_decline(user_id=user_key(request.user), registration_id=offer_id,
                                     idempotency_key=key_from_request(request),
                                     fingerprint=request_fingerprint(request))
    return outcome.response.to_http(replayed=outcome.replayed)
