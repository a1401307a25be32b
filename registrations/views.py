"""Pages of a registration: register (the panel on the event's page), My registrations, the ticket's calendar
file and QR code, and cancel. Thin: they parse input, call a service and render."""

import functools
import hashlib
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.utils.http import quote_etag
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from registrations import selectors, serializers, services
from registrations.calendar import Entry, calendar_add_links, calendar_ics, event_add_links
from registrations.checkins import selectors as checkin_selectors
from registrations.errors import RegistrationError
from registrations.models import CANCELLED, CONFIRMED, OFFERED, WAITLISTED
from registrations.questions import question_sets
from registrations.registration_metrics import count_registration
from registrations.statuses import registration_standing, waiting_rule
from registrations.ticket_tokens import ticket_url
from tems.accounts import AccountError, calendar_feed_user
from tems.clock import utcnow
from tems.errors import DomainError
from tems.http import after_save
from tems.idempotency import REPLAYED_HEADER, key_from_request, request_fingerprint
from tems.identity import user_key
from tems.pagination import next_page_url, page_args
from tems.ratelimit import counts_own_writes
from tems.teams.selectors import team_name


def event_or_404(event_id: str):
    try:
        return selectors.event_get(event_id=event_id)
    except RegistrationError as error:
        raise Http404(error.detail) from None


# The register and cancel forms carry an idempotency key: rendered fresh by the server (a plain post works
# without JavaScript) and replaced at the moment of each tap by static/js/tems-idempotency.js.

PANEL = "registrations/event_detail.html#registration-panel"
ROW = "registrations/my_registrations.html#registration-row"
ROWS = "registrations/my_registrations.html#registration-rows"


def offer_buttons() -> list[tuple[str, str, str, str, str]]:
    """An offer's Accept and Decline, on the event page, in My registrations and on the page a mail's link opens:
    (action, label, busy words, a fresh key each, class): two taps, two keys. Decline is the answer to the
    question the page asks first (``_offer.html``)."""
    return [("accept", "Accept the seat", "Accepting…", str(uuid.uuid4()), "button primary"),
            ("decline", "Yes, decline the seat", "Declining…", str(uuid.uuid4()), "button danger")]


def panel_context(request: HttpRequest, event, *, registration: dict | None = None,
                  notice: tuple[str, str] | None = None, lookup: bool = True, given: dict | None = None,
                  errors: dict | None = None) -> dict:
    if registration is None and lookup:
        registration = _registration_now(request, event)
    context = {"event": event, "seats": selectors.seats_for(event=event), "registration": registration,
               "fresh_key": str(uuid.uuid4()), "notice": notice, "offer_buttons": offer_buttons(),
               "waiting_rule": waiting_rule(event)}
    if registration is None and not event.registration_closed:
        # The form asks the event's questions as stored now, and carries them signed: the post is checked
        # against exactly these, with no read, and the seat's condition refuses it if they change meanwhile.
        asked = question_sets.questions_for(event.event_id, fresh=True,
                                        read=lambda: question_sets.questions_get(event_id=event.event_id))
        context.update(questions_token=question_sets.sign_questions(event.event_id, asked),
                       question_fields=question_sets.form_fields(asked, given=given or {}, errors=errors or {}))
    return context


def _registration_now(request: HttpRequest, event) -> dict | None:
    """The caller's registration for ``event`` as stored now, its waitlist position exact as of this read, with
    what the student is told of it (``standing``) and the answers they gave."""
    claim = selectors.claim_get(event_id=event.event_id, user_id=user_key(request.user))
    if claim is None:
        return None
    # The student's own copy holds the answers and an offer's end; the claim holds neither.
    try:
        own = selectors.registration_get(user_id=claim.user_id, registration_id=claim.registration_id)
    except RegistrationError:
        own = None
    shown = selectors.registration_view(registration=claim)
    return with_standing(shown, event, offer_ends_at=own.offer_ends_at if own else None,
                         answers=own.answers if own else None,
                         checked_in=claim.status == CONFIRMED and checkin_selectors.checked_in(
                             event=event, registration_id=claim.registration_id))


def with_standing(shown: dict, event, *, offer_ends_at=None, answers: str | None = None,
                  checked_in: bool = False) -> dict:
    """``shown`` (a registration's dict) with what the page says of it: its standing, an offer's end, the
    answers given and, where a calendar entry is offered, the Google and Outlook links."""
    offer_ends = (serializers.offer_ends(ends_at=offer_ends_at, starts_at=event.starts_at)
                  if shown["status"] == OFFERED and offer_ends_at is not None else None)
    standing = registration_standing(status=shown["status"], event=event, position=shown.get("position"),
                                     offer_ends=offer_ends, checked_in=checked_in)
    shown = {**shown, "standing": standing, "offer_ends": offer_ends,
             "given_answers": answers_shown(question_sets.answers_of(answers))}
    if standing.offers_calendar:
        shown.update(event_add_links(event))
    return shown


def answers_shown(answers: list[dict]) -> list[dict]:
    """The answers a student gave, as the page lists them: each question's label and the answer as text."""
    return [{"label": answer.get("label", ""), "text": question_sets.answer_text(answer.get("value"))}
            for answer in answers]


def _shown_registration(outcome: services.RegistrationOutcome, event, request: HttpRequest) -> dict:
    """What the page says of the tap's registration. A waiting one's position is read now: the answer's is as
    of its join's block (registrations.seating.lanes), and at the end of a burst it still counts the tickets other
    lanes' blocks never hand out, so the page and the notice would say a number the next page contradicts."""
    if outcome.data["status"] != WAITLISTED:
        return with_standing(outcome.data, event)
    # Gone already (cancelled in another tab): the answer's own count, the only one there is.
    return _registration_now(request, event) or with_standing({
        **outcome.data, "position": outcome.data.get("position_at_most", outcome.data.get("position"))}, event)


def _registration_notice(outcome: services.RegistrationOutcome, event, registration: dict) -> str:
    if outcome.response.status == 200:
        return f"You were already registered for “{event.title}”: here is your registration."
    if registration["status"] == WAITLISTED:
        return f"“{event.title}” is full: you are number {registration['position']} on the waiting list."
    return f"You are registered for “{event.title}”."


def page_errors(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A refusal before the view ran (bad key, key reused, still in flight) becomes a message, not a crash."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except DomainError as error:
            return error_redirect(request, error, reverse("registrations:my_registrations"))

    return wrapper


def error_redirect(request: HttpRequest, error: DomainError, url: str) -> HttpResponse:
    if error.code == "not_found":
        raise Http404(error.detail)
    messages.error(request, error.detail)
    return after_save(request, url)


@require_POST
@login_required
@counts_own_writes
def registration_create(request: HttpRequest, event_id: str) -> HttpResponse:
    user_id = user_key(request.user)
    event_url = reverse("registrations:event_detail", kwargs={"event_id": event_id})
    # The questions the form was rendered with (none for a form without): the answers are checked against them.
    seen = question_sets.load_signed(request.POST.get(question_sets.TOKEN_FIELD),
                                     event_id) or question_sets.NO_QUESTIONS
    given = question_sets.answers_from_form(seen, request.POST)
    try:
        outcome = services.registration_create(
            event_id=event_id, user_id=user_id, user_name=request.user.get_username(),
            idempotency_key=key_from_request(request),
            fingerprint=request_fingerprint(request),
            answers=question_sets.parse_answers(questions=seen, given=given), questions_version=seen.version,
            write_limit=settings.TEMS_WRITE_RATE,
        )
    except RegistrationError as error:
        if error.code in ("invalid", "precondition_failed"):
            return _answer_again(request, event_id, error, given)
        return error_redirect(request, error, event_url)
    except DomainError as error:
        return error_redirect(request, error, event_url)
    count_registration(outcome)
    event = event_or_404(event_id)  # fresh seat counts for the page; the registration is already decided
    registration = _shown_registration(outcome, event, request)
    notice = _registration_notice(outcome, event, registration)
    if request.htmx:
        context = panel_context(request, event, registration=registration, notice=("success", notice))
        response = render(request, PANEL, {**context, "seats_oob": True})
        if outcome.kind == "replayed":
            # Same contract as the API: a retried tap is told it was answered from the first one.
            response[REPLAYED_HEADER] = "true"
        return response
    messages.success(request, notice)
    return redirect(event_url)


def _answer_again(request: HttpRequest, event_id: str, error: RegistrationError, given: dict) -> HttpResponse:
    """The form again, with what was typed, the event's questions as they are now and what to correct: nothing
    was written (a required question left out, or the questions changed since the form was shown)."""
    event = event_or_404(event_id)
    context = panel_context(request, event, registration=None, lookup=False, given=given,
                            errors=error.errors, notice=("error", error.detail))
    if request.htmx:
        return render(request, PANEL, context)
    return render(request, "registrations/event_detail.html", {**context, "team_name": team_name(event.team)},
                  status=400)


@require_GET
@login_required
@never_cache  # Back must not show a seat count or a panel from before the last tap
def my_registrations(request: HttpRequest) -> HttpResponse:
    try:
        page = selectors.registration_page(user_id=user_key(request.user), **page_args(request),
                                           checked_in=checkin_selectors.checked_in_registrations)
    except DomainError as error:  # a stale or edited cursor: say so and start again from the first page
        messages.error(request, error.detail)
        return redirect("registrations:my_registrations")
    registrations = page.items
    for row in registrations:
        # One key per form: each cancel button is its own tap.
        row["fresh_key"] = str(uuid.uuid4())
        row["starts"] = datetime.fromisoformat(row["event_starts_at"]) if row["event_starts_at"] else None
        row["given_answers"] = answers_shown(row["answers"])
        if row["standing"]["offers_calendar"]:
            row.update(calendar_add_links(
                event_id=row["event_id"], title=row["event_title"], location=row["event_location"],
                starts_at=datetime.fromisoformat(row["event_starts_at"]),
                ends_at=datetime.fromisoformat(row["event_ends_at"])))
        if "offer" in row:
            row["offer_ends"] = datetime.fromisoformat(row["offer"]["ends_at"])
            row["offer_buttons"] = offer_buttons()
    # By the event's date, soonest first (an event that is gone sorts last), within the page: the pages themselves
    # go newest registration first, the only order one Query of the student's items can give.
    registrations.sort(key=lambda row: (row["starts"] is None, row["starts"] or datetime.min.replace(tzinfo=UTC)))
    context = {"registrations": registrations, "next_url": next_page_url(request, page)}
    if request.htmx and request.GET.get("cursor"):
        # The More button swaps itself for the next rows (and the next More button).
        return render(request, ROWS, context)
    return render(request, "registrations/my_registrations.html", context)


@require_GET
@login_required
def registration_calendar(request: HttpRequest, registration_id: str) -> HttpResponse:
    """The registration as an .ics file; someone else's registration is 404 (keys are per user)."""
    try:
        registration = selectors.registration_get(user_id=user_key(request.user), registration_id=registration_id)
    except RegistrationError as error:
        raise Http404(error.detail) from None
    if registration.status == CANCELLED:
        raise Http404("That registration is cancelled.")
    event = event_or_404(registration.event_id)
    body = calendar_ics([calendar_entry(registration, selectors.registration_view(registration=registration)
                                        .get("position"), event)], stamp=utcnow())
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{event.event_id}.ics"'
    return response


def calendar_entry(registration, position: int | None, event) -> Entry:
    offer_ends = (serializers.offer_ends(ends_at=registration.offer_ends_at, starts_at=event.starts_at)
                  if registration.status == OFFERED and registration.offer_ends_at else None)
    return Entry(registration_id=registration.registration_id, event=event,
                 standing=registration_standing(status=registration.status, event=event, position=position,
                                                offer_ends=offer_ends),
                 ticket_url=ticket_url(event_id=event.event_id, registration_id=registration.registration_id,
                                       user_id=registration.user_id))


@require_GET
def calendar_feed(request: HttpRequest) -> HttpResponse:
    """The student's subscription feed (``webcal://…/me/calendar.ics?token=…``): every registration of theirs
    whose event still exists, as calendar apps poll it. The token stands for the log-in (calendar apps carry no
    session); one that is forged, altered or revoked on the account page is a plain 404 that says so."""
    try:
        user = calendar_feed_user(token=request.GET.get("token", ""))
    except AccountError as error:
        return HttpResponse(error.detail, status=404, content_type="text/plain; charset=utf-8")
    rows = selectors.registration_feed(user_id=user_key(user))
    body = calendar_ics([calendar_entry(registration, position, event) for registration, position, event in rows],
                        stamp=utcnow(), name="TEMS: my registrations")
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    patch_cache_control(response, private=True, no_cache=True)
    return response


# The QR code of a ticket never changes while the registration lives, but a cancelled one must stop showing it
# soon: an hour in the owner's browser cache, then a revalidation (304 by ETag, one GetItem and no drawing).
QR_MAX_AGE_SECONDS = 3600
SVG_CONTENT_TYPE = "image/svg+xml"


@require_GET
@login_required
def registration_qr(request: HttpRequest, registration_id: str) -> HttpResponse:
    """The ticket's QR code as an SVG image, drawn on read; only for its owner (anyone else's is 404)."""
    try:
        ticket = selectors.registration_ticket_url(user_id=user_key(request.user), registration_id=registration_id)
    except RegistrationError as error:
        raise Http404(error.detail) from None
    # The drawing is a function of the ticket URL alone, so the URL's hash is its ETag: a 304 draws nothing.
    etag = quote_etag(hashlib.sha256(ticket.encode()).hexdigest()[:32])
    response = get_conditional_response(request, etag=etag) or HttpResponse(
        serializers.registration_qr_svg(ticket_url=ticket), content_type=SVG_CONTENT_TYPE)
    response["ETag"] = etag
    # private: the image is one student's ticket, never for a shared cache.
    patch_cache_control(response, private=True, max_age=QR_MAX_AGE_SECONDS)
    patch_vary_headers(response, ["Cookie"])
    return response


CANCEL_CONFIRM = "registrations/cancel_confirm.html"
CANCEL_STEP = "registrations/_cancel_form.html"


@require_http_methods(["GET", "POST"])
@login_required
@page_errors
def registration_cancel(request: HttpRequest, registration_id: str) -> HttpResponse:
    """GET asks first (a page, or the question swapped in place by htmx); POST cancels."""
    from_event_page = request.POST.get("from", request.GET.get("from")) == "event"
    if request.method == "GET":
        return _cancel_confirm(request, registration_id, from_event_page=from_event_page)
    user_id = user_key(request.user)
    # The key's record is written in the cancel's own transaction: a retried tap replays this outcome.
    outcome = services.registration_cancel_once(
        user_id=user_id, registration_id=registration_id, idempotency_key=key_from_request(request),
        fingerprint=request_fingerprint(request),
    )
    event = event_or_404(outcome.data["event_id"])
    notice = _cancel_notice(event, was_waitlisted=request.POST.get("status") == "waitlisted")
    if request.htmx:
        if from_event_page:
            context = panel_context(request, event, notice=("success", notice), lookup=False)
            response = render(request, PANEL, {**context, "seats_oob": True})
        else:
            standing = serializers.standing_to_dict(registration_standing(status=CANCELLED, event=event))
            response = render(request, ROW, {"row": {"registration_id": registration_id, "status": CANCELLED,
                                                     "event_id": event.event_id, "event_title": event.title,
                                                     "standing": standing, "notice": notice}})
        if outcome.replayed:
            response[REPLAYED_HEADER] = "true"
        return response
    messages.success(request, notice)
    if from_event_page:
        return redirect("registrations:event_detail", event_id=event.event_id)
    return redirect("registrations:my_registrations")


def _cancel_confirm(request: HttpRequest, registration_id: str, *, from_event_page: bool) -> HttpResponse:
    registration = selectors.registration_view(
        registration=selectors.registration_get(user_id=user_key(request.user), registration_id=registration_id))
    event = event_or_404(registration["event_id"])
    origin = "event" if from_event_page else "list"
    back_url = (reverse("registrations:event_detail", kwargs={"event_id": event.event_id}) if from_event_page
                else reverse("registrations:my_registrations"))
    context = {"registration_id": registration_id, "status": registration["status"],
               "position": registration.get("position"), "event": event, "seats": selectors.seats_for(event=event),
               "from": origin, "back_url": back_url,
               "target": "#registration-panel" if from_event_page else "closest li", "fresh_key": str(uuid.uuid4())}
    if request.GET.get("keep"):
        # "Keep my seat": htmx puts the first step back; without JavaScript the link itself leads back.
        return render(request, CANCEL_STEP, context) if request.htmx else redirect(back_url)
    return render(request, f"{CANCEL_CONFIRM}#cancel-confirm" if request.htmx else CANCEL_CONFIRM, context)


def _cancel_notice(event, *, was_waitlisted: bool) -> str:
    if was_waitlisted:
        return f"You left the waiting list for “{event.title}”."
    if event.offers_seats:
        return (f"Your registration for “{event.title}” is cancelled. Your seat is offered to the first person on "
                "the waiting list, or went back to the free seats if nobody was waiting.")
    return (f"Your registration for “{event.title}” is cancelled. Your seat went to the next person on the "
            "waiting list, or back to the free seats if nobody was waiting.")


