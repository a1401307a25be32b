"""Pages of the registrations app: thin, they parse input, call a service and render."""

import functools
import hashlib
import itertools
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.utils.formats import date_format
from django.utils.http import quote_etag
from django.utils.timezone import localtime
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from registrations import attendees, edits, questions, selectors, services
from registrations.calendar import registration_ics
from registrations.checkins import selectors as checkin_selectors
from registrations.errors import RegistrationError
from registrations.forms import EventEditForm, EventForm
from registrations.metrics import count_registration
from registrations.models import OFFERED, WAITLISTED
from registrations.offer_links import offer_link_read
from registrations.statuses import card_statuses
from tems.clock import utcnow
from tems.decorators import staff_required
from tems.errors import DomainError
from tems.http import after_save, conflict_status
from tems.idempotency import REPLAYED_HEADER, fingerprint, key_from_request, request_fingerprint, request_payload
from tems.identity import user_key
from tems.merge import load_base, panel_rows, sign_base
from tems.pagination import next_page_url, page_args


def _event_or_404(event_id: str):
    try:
        return selectors.event_get(event_id=event_id)
    except RegistrationError as error:
        raise Http404(error.detail) from None


@require_GET
@login_required
def event_list(request: HttpRequest) -> HttpResponse:
    return _event_page(request, past=False)


@require_GET
@login_required
def event_list_past(request: HttpRequest) -> HttpResponse:
    return _event_page(request, past=True)


def _event_page(request: HttpRequest, *, past: bool) -> HttpResponse:
    """A page of events; "More events" asks htmx for the next page's cards (a plain link without JavaScript)."""
    try:
        page = selectors.event_page(past=past, **page_args(request))
    except DomainError as error:
        return render(request, "registrations/event_list.html",
                      {"past": past, "events": [], "error": error.detail}, status=400)
    if not past:
        statuses = card_statuses(user_id=user_key(request.user), events=page.items)
        for event in page.items:
            event.card_status = statuses.get(event.event_id)
    template = "registrations/event_list.html"
    if request.htmx:
        template += "#event-page"
    return render(request, template, {"past": past, "events": page.items, "next_url": next_page_url(request, page),
                                      "continued": bool(request.GET.get("cursor"))})


@require_GET
@login_required
@never_cache  # Back must not show a seat count or a panel from before the last tap
def event_detail(request: HttpRequest, event_id: str) -> HttpResponse:
    event = _event_or_404(event_id)
    context = _panel_context(request, event)
    if request.user.is_staff:
        context["checkins"] = checkin_selectors.checkin_list(event_id=event_id)
    return render(request, "registrations/event_detail.html", context)


# --- registration pages -------------------------------------------------------------------------------------
# The register and cancel forms carry an idempotency key: rendered fresh by the server (a plain post works
# without JavaScript) and replaced at the moment of each tap by static/js/tems-idempotency.js.

PANEL = "registrations/event_detail.html#registration-panel"
ROW = "registrations/my_registrations.html#registration-row"
ROWS = "registrations/my_registrations.html#registration-rows"


def _panel_context(request: HttpRequest, event, *, registration: dict | None = None,
                   notice: tuple[str, str] | None = None, lookup: bool = True, given: dict | None = None,
                   errors: dict | None = None) -> dict:
    if registration is None and lookup:
        registration = _registration_now(request, event)
    context = {"event": event, "registration": registration, "fresh_key": str(uuid.uuid4()), "notice": notice,
               "offer_buttons": offer_buttons()}
    if registration is None and not event.registration_closed:
        # The form asks the event's questions as stored now, and carries them signed: the post is checked
        # against exactly these, with no read, and the seat's condition refuses it if they change meanwhile.
        asked = questions.questions_for(event.event_id, fresh=True,
                                        read=lambda: questions.questions_get(event_id=event.event_id))
        context.update(questions_token=questions.sign_questions(event.event_id, asked),
                       question_fields=questions.form_fields(asked, given=given or {}, errors=errors or {}))
    return context


def _registration_now(request: HttpRequest, event) -> dict | None:
    """The caller's registration for ``event`` as stored now, its waitlist position exact as of this read."""
    claim = selectors.claim_get(event_id=event.event_id, user_id=user_key(request.user),
                                layout=event.registration_layout)
    if claim is None:
        return None
    shown = selectors.registration_view(registration=claim)
    if claim.status == OFFERED:  # the offer's end is on the offer, one more read only for an offered seat
        offer = selectors.offer_get(user_id=claim.user_id, registration_id=claim.registration_id)
        shown["offer_ends"] = selectors.offer_ends(ends_at=offer.ends_at, starts_at=event.starts_at)
    return shown


def _shown_registration(outcome: services.RegistrationOutcome, event, request: HttpRequest) -> dict:
    """What the page says of the tap's registration. A waiting one's position is read now: the answer's is as
    of its join's block (registrations.seating.tickets), and at the end of a burst it still counts the tickets other
    lanes' blocks never hand out, so the page and the notice would say a number the next page contradicts."""
    if outcome.data["status"] != WAITLISTED:
        return outcome.data
    # Gone already (cancelled in another tab): the answer's own count, the only one there is.
    return _registration_now(request, event) or {
        **outcome.data, "position": outcome.data.get("position_at_most", outcome.data.get("position"))}


def _registration_notice(outcome: services.RegistrationOutcome, event, registration: dict) -> str:
    if outcome.response.status == 200:
        return f"You were already registered for “{event.title}”: here is your registration."
    if registration["status"] == WAITLISTED:
        return f"“{event.title}” is full: you are number {registration['position']} on the waiting list."
    return f"You are registered for “{event.title}”."


def _page_errors(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A refusal before the view ran (bad key, key reused, still in flight) becomes a message, not a crash."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except DomainError as error:
            return _error_redirect(request, error, reverse("registrations:my_registrations"))

    return wrapper


def _error_redirect(request: HttpRequest, error: DomainError, url: str) -> HttpResponse:
    if error.code == "not_found":
        raise Http404(error.detail)
    messages.error(request, error.detail)
    return after_save(request, url)


@require_POST
@login_required
def registration_create(request: HttpRequest, event_id: str) -> HttpResponse:
    user_id = user_key(request.user)
    event_url = reverse("registrations:event_detail", kwargs={"event_id": event_id})
    # The questions the form was rendered with (none for a form without): the answers are checked against them.
    seen = questions.load_signed(request.POST.get(questions.TOKEN_FIELD), event_id) or questions.NO_QUESTIONS
    given = questions.answers_from_form(seen, request.POST)
    try:
        outcome = services.registration_create(
            event_id=event_id, user_id=user_id, user_name=request.user.get_username(),
            idempotency_key=key_from_request(request),
            fingerprint=request_fingerprint(request),
            answers=questions.parse_answers(questions=seen, given=given), questions_version=seen.version,
        )
    except RegistrationError as error:
        if error.code in ("invalid", "precondition_failed"):
            return _answer_again(request, event_id, error, given)
        return _error_redirect(request, error, event_url)
    except DomainError as error:
        return _error_redirect(request, error, event_url)
    count_registration(outcome)
    event = _event_or_404(event_id)  # fresh seat counts for the page; the registration is already decided
    registration = _shown_registration(outcome, event, request)
    notice = _registration_notice(outcome, event, registration)
    if request.htmx:
        context = _panel_context(request, event, registration=registration, notice=("success", notice))
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
    event = _event_or_404(event_id)
    context = _panel_context(request, event, registration=None, lookup=False, given=given,
                             errors=error.errors, notice=("error", error.detail))
    if request.htmx:
        return render(request, PANEL, context)
    return render(request, "registrations/event_detail.html", context, status=400)


@require_GET
@login_required
@never_cache  # Back must not show a seat count or a panel from before the last tap
def my_registrations(request: HttpRequest) -> HttpResponse:
    try:
        page = selectors.registration_page(user_id=user_key(request.user), **page_args(request))
    except DomainError as error:  # a stale or edited cursor: say so and start again from the first page
        messages.error(request, error.detail)
        return redirect("registrations:my_registrations")
    registrations = page.items
    for row in registrations:
        # One key per form: each cancel button is its own tap.
        row["fresh_key"] = str(uuid.uuid4())
        row["starts"] = datetime.fromisoformat(row["event_starts_at"]) if row["event_starts_at"] else None
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
    if registration.status == "cancelled":
        raise Http404("That registration is cancelled.")
    event = _event_or_404(registration.event_id)
    body = registration_ics(event=event, registration=selectors.registration_view(registration=registration),
                            stamp=utcnow())
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{event.event_id}.ics"'
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
        selectors.registration_qr_svg(ticket_url=ticket), content_type=SVG_CONTENT_TYPE)
    response["ETag"] = etag
    # private: the image is one student's ticket, never for a shared cache.
    patch_cache_control(response, private=True, max_age=QR_MAX_AGE_SECONDS)
    patch_vary_headers(response, ["Cookie"])
    return response


CANCEL_CONFIRM = "registrations/cancel_confirm.html"
CANCEL_STEP = "registrations/_cancel_form.html"


@require_http_methods(["GET", "POST"])
@login_required
@_page_errors
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
    event = _event_or_404(outcome.data["event_id"])
    notice = _cancel_notice(event, was_waitlisted=request.POST.get("status") == "waitlisted")
    if request.htmx:
        if from_event_page:
            context = _panel_context(request, event, notice=("success", notice), lookup=False)
            response = render(request, PANEL, {**context, "seats_oob": True})
        else:
            response = render(request, ROW, {"row": {"registration_id": registration_id, "status": "cancelled",
                                                     "event_id": event.event_id, "event_title": event.title,
                                                     "notice": notice}})
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
    event = _event_or_404(registration["event_id"])
    origin = "event" if from_event_page else "list"
    back_url = (reverse("registrations:event_detail", kwargs={"event_id": event.event_id}) if from_event_page
                else reverse("registrations:my_registrations"))
    context = {"registration_id": registration_id, "status": registration["status"],
               "position": registration.get("position"), "event": event, "from": origin, "back_url": back_url,
               "target": "#registration-panel" if from_event_page else "closest li", "fresh_key": str(uuid.uuid4())}
    if request.GET.get("keep"):
        # "Keep my seat": htmx puts the first step back; without JavaScript the link itself leads back.
        return render(request, CANCEL_STEP, context) if request.htmx else redirect(back_url)
    return render(request, f"{CANCEL_CONFIRM}#cancel-confirm" if request.htmx else CANCEL_CONFIRM, context)


def _cancel_notice(event, *, was_waitlisted: bool) -> str:
    if was_waitlisted:
        return f"You left the waiting list for “{event.title}”."
    return (f"Your registration for “{event.title}” is cancelled. Your seat went to the next person on the "
            "waiting list, or back to the free seats if nobody was waiting.")


@require_http_methods(["GET", "POST"])
@staff_required
def event_create(request: HttpRequest) -> HttpResponse:
    form = EventForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user_id = user_key(request.user)
        try:
            outcome = services.event_create_once(
                **form.cleaned_data, user_id=user_id, created_by=request.user.get_username(),
                idempotency_key=key_from_request(request),
                fingerprint=request_fingerprint(request),
            )
        except DomainError as error:
            form.add_error(None, error.detail)
        else:
            event = outcome.data
            if not outcome.replayed:
                messages.success(request, f"Created “{event['title']}”.")
            return redirect("registrations:event_detail", event_id=event["id"])
    # One key per form shown: each press of "Create event" on this page is the same tap until it succeeds.
    return render(request, "registrations/event_form.html",
                  {"form": form, "creating": True, "fresh_key": str(uuid.uuid4())})


LABELS = {"title": "Title", "location": "Location", "starts_at": "Starts", "capacity": "Capacity",
          "description": "Description", "reminder_hours": "Reminder (hours before)",
          "offer_hours": "Offer window (hours)"}


def _base_scope(event_id: str, version: int) -> str:
    return f"event:{event_id}:v{version}"


def _edit_initial(event_id: str, values: dict, version: int) -> dict:
    """Form values for ``values`` (canonical, tems.merge) at ``version``, with the signed base they came from."""
    values = edits.canonical(values)
    return {**values, "starts_at": datetime.fromisoformat(values["starts_at"]), "version": version,
            "base": sign_base(values, scope=_base_scope(event_id, version))}


@require_http_methods(["GET", "POST"])
@staff_required
def event_edit(request: HttpRequest, event_id: str) -> HttpResponse:
    template = "registrations/event_form.html#event-form" if request.htmx else "registrations/event_form.html"
    if request.method == "GET":
        event = _event_or_404(event_id)
        form = EventEditForm(initial=_edit_initial(event_id, _initial(event), int(event.version)))
        return render(request, template, {"form": form, "event": event})

    base = _posted_base(request, event_id)
    form = EventEditForm(request.POST, opened_starts_at=base and datetime.fromisoformat(base["starts_at"]))
    conflict = None
    if form.is_valid():
        data = dict(form.cleaned_data)
        expected_version = data.pop("version")
        data.pop("base")
        try:
            outcome = edits.event_edit(event_id=event_id, expected_version=expected_version, base=base, mine=data,
                                       updated_by=request.user.get_username())
        except RegistrationError as error:
            if error.code == "not_found":
                raise Http404(error.detail) from None
            if error.code == "conflict" and "merge" in error.extra:
                conflict = _conflict(event_id, error, data)
                current = error.extra["current"]
                # Nothing is written until they decide: the form holds the merge and is based on their version.
                initial = _edit_initial(event_id, current, int(current["version"]))
                merged = error.extra["merge"].values
                form = EventEditForm(initial={**initial, **merged,
                                              "starts_at": datetime.fromisoformat(merged["starts_at"])})
            else:
                for field, problems in error.errors.items():
                    for problem in problems:
                        form.add_error(field if field in form.fields else None, problem)
                if not error.errors:
                    form.add_error(None, error.detail)
        else:
            note = " Kept the changes saved meanwhile by someone else." if outcome.merge else ""
            messages.success(request, _saved_notice(outcome.saved) + note)
            return after_save(request, reverse("registrations:event_detail", kwargs={"event_id": event_id}))
    event = _event_or_404(event_id)
    return render(request, template, {"form": form, "event": event, "conflict": conflict},
                  status=conflict_status(request, conflict))


def _posted_base(request: HttpRequest, event_id: str) -> dict | None:
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        return None
    return load_base(request.POST.get("base", ""), scope=_base_scope(event_id, version), fields=edits.EDITED_FIELDS)


def _conflict(event_id: str, error: RegistrationError, mine: dict) -> dict:
    current, merge, base = error.extra["current"], error.extra["merge"], error.extra["base"]
    url = reverse("registrations:event_edit", kwargs={"event_id": event_id})
    return {"title": "Someone else saved this event while you were editing", "detail": error.detail,
            "opened_version": error.extra["expected_version"],
            "current_version": current["version"],
            "rows": panel_rows(merge=merge, base=base, theirs=edits.canonical(current), mine=edits.canonical(mine),
                               labels=LABELS, show=_shown),
            "clashes": len(merge.clashes), "discard_url": url, "target": "event-form", "form_id": "event-edit-form"}


def _shown(value) -> str:
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        # A start (canonical ISO): shown as people read dates, in the site's time zone.
        return date_format(localtime(datetime.fromisoformat(value)), "D j M Y, H:i")
    return "(empty)" if value is None or value == "" else str(value)


def _saved_notice(saved: services.EventUpdate) -> str:
    if saved.promotion_pending:
        return ("Saved. Filling the free seats from the waiting list is still being done; "
                "it finishes within a minute.")
    if saved.promoted:
        return f"Saved. {saved.promoted} moved up from the waiting list."
    return "Saved."


def _initial(event) -> dict:
    return {
        "title": event.title,
        "description": event.description,
        "location": event.location,
        "starts_at": event.starts_at,
        "capacity": event.capacity,
        "reminder_hours": event.reminder_hours_or_default,
        "offer_hours": int(event.offer_hours or 0),
        "version": event.version,
    }


# --- staff: attendee list -----------------------------------------------------------------------------------

@require_GET
@staff_required
def attendee_list(request: HttpRequest, event_id: str) -> HttpResponse:
    event = _event_or_404(event_id)
    status, search = request.GET.get("status") or "", request.GET.get("q") or ""
    try:
        page = attendees.attendee_page(event_id=event_id, status=status, search=search,
                                       layout=event.registration_layout, **page_args(request))
    except DomainError as error:  # unknown status, too long a search, a stale cursor: say so, list from the top
        messages.error(request, error.detail)
        return redirect("registrations:attendee_list", event_id=event_id)
    for row in page.items:
        row["answer_lines"] = [(a.get("label"), questions.answer_text(a.get("value"))) for a in row["answers"]]
    context = {"event": event, "attendees": page.items, "next_url": next_page_url(request, page),
               "status": status, "q": search, "statuses": attendees.STATUSES}
    if request.htmx and request.GET.get("cursor"):
        return render(request, "registrations/attendee_list.html#attendee-rows", context)
    return render(request, "registrations/attendee_list.html", context)


@require_GET
@staff_required
def attendee_export(request: HttpRequest, event_id: str) -> HttpResponse:
    event = _event_or_404(event_id)
    try:
        lines = attendees.attendee_csv(event_id=event_id, status=request.GET.get("status"),
                                       search=request.GET.get("q"), layout=event.registration_layout,
                                       asked=questions.questions_get(event_id=event_id))
        first = next(lines)  # checks the filters before the 200 is committed to
    except DomainError as error:
        messages.error(request, error.detail)
        return redirect("registrations:attendee_list", event_id=event_id)
    response = StreamingHttpResponse(itertools.chain([first], lines), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="attendees-{event.event_id}.csv"'
    return response


# --- waitlist offers ----------------------------------------------------------------------------------------
# Accept and decline are POSTs with a key per tap, from the event page, My registrations, or the page a mail's
# signed link opens (mail scanners fetch links: a GET only shows the offer).

OFFER_PAGE = "registrations/offer.html"
OFFER_ACTIONS = {"accept": services.offer_accept, "decline": services.offer_decline}


def offer_buttons() -> list[tuple[str, str, str, str, str]]:
    """Accept and Decline as (action, label, busy words, a fresh key each, class): two taps, two keys."""
    return [("accept", "Accept the seat", "Accepting…", str(uuid.uuid4()), "button primary"),
            ("decline", "Decline", "Declining…", str(uuid.uuid4()), "button danger")]


def _offer_answer(request: HttpRequest, *, user_id: str, registration_id: str) -> tuple[str, str, bool]:
    """Run the tap's accept or decline for ``user_id`` (the session's, or the one a mail's link names): (level,
    notice, replayed); a refusal is a notice, never a 5xx."""
    action = OFFER_ACTIONS.get(request.POST.get("action", ""))
    if action is None:
        return "error", "Choose Accept or Decline.", False
    try:
        outcome = action(user_id=user_id, registration_id=registration_id, idempotency_key=key_from_request(request),
                         fingerprint=fingerprint(method="POST", route=request.path, user_id=user_id,
                                                 payload=request_payload(request)))
    except DomainError as error:
        if error.code == "busy":
            raise
        return "error", error.detail, False
    if outcome.data["state"] == "accepted":
        return "success", "The seat is yours: your ticket is on the event page and in My registrations.", \
            outcome.replayed
    return "success", "You declined the seat: it goes to the next in line.", outcome.replayed


@require_POST
@login_required
@_page_errors
def offer_respond(request: HttpRequest, registration_id: str) -> HttpResponse:
    """Accept or decline the caller's offer from the event page or My registrations."""
    level, notice, replayed = _offer_answer(request, user_id=user_key(request.user), registration_id=registration_id)
    offer = selectors.offer_get(user_id=user_key(request.user), registration_id=registration_id)
    if request.htmx and request.POST.get("from") == "event":
        event = _event_or_404(offer.event_id)
        response = render(request, PANEL, {**_panel_context(request, event, notice=(level, notice)),
                                           "seats_oob": True})
        if replayed:
            response[REPLAYED_HEADER] = "true"
        return response
    getattr(messages, level)(request, notice)
    if request.POST.get("from") == "event":
        return redirect("registrations:event_detail", event_id=offer.event_id)
    return redirect("registrations:my_registrations")


@require_http_methods(["GET", "POST"])
def offer_page(request: HttpRequest, token: str) -> HttpResponse:
    """The page a mail's link opens: the offer and, while it is open, Accept and Decline (each a POST)."""
    try:
        link = offer_link_read(token)
        notice = None
        if request.method == "POST":
            notice = _offer_answer(request, user_id=link.user_id, registration_id=link.registration_id)[:2]
        offer = selectors.offer_get(user_id=link.user_id, registration_id=link.registration_id)
    except RegistrationError as error:
        if error.code == "busy":
            return render(request, OFFER_PAGE, {"notice": ("error", error.detail), "token": token}, status=503)
        return render(request, OFFER_PAGE, {"notice": ("error", error.detail)}, status=404)
    event = _event_or_404(offer.event_id)
    ends = selectors.offer_ends(ends_at=offer.ends_at, starts_at=event.starts_at)
    is_open = offer.state == OFFERED and ends > utcnow()
    return render(request, OFFER_PAGE, {"offer": offer, "event": event, "is_open": is_open, "notice": notice,
                                        "ends": ends,
                                        "offer_buttons": offer_buttons(),
                                        "action_url": reverse("registrations:offer_page", kwargs={"token": token})})
