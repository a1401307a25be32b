"""Pages of events: the lists, an event's page, and staff's create and edit forms."""

import calendar
import re
import uuid
from datetime import date, datetime, timedelta
from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from registrations import edits, selectors
from registrations.approvals.selectors import draft_visible_to
from registrations.checkins import selectors as checkin_selectors
from registrations.errors import RegistrationError
from registrations.events import selectors as event_selectors
from registrations.events import services as event_services
from registrations.events.forms import EventEditForm, EventForm, EventSearchForm, event_form_values
from registrations.events.models import CATEGORY_LABELS
from registrations.questions import forms as question_forms
from registrations.questions.question_sets import MAX_QUESTIONS, questions_get
from registrations.views import event_or_404, panel_context
from registrations.write_rules import StoredOutcome
from tems.audit import actor_of
from tems.audit import selectors as audit_selectors
from tems.audit.views import log_page
from tems.audit.wording import ACTIONS, EVENT_ACTIONS
from tems.clock import utcnow
from tems.errors import DomainError
from tems.forms import add_error_to_form
from tems.http import after_save, conflict_status
from tems.idempotency import key_from_request, request_fingerprint
from tems.identity import user_key
from tems.merge import conflict_panel, load_base, sign_base
from tems.pagination import next_page_url, page_args
from tems.permissions import EVENT_APPROVE, EVENT_DOOR, EVENT_DOORS, EVENT_MANAGE, holds
from tems.teams.forms import DoorVolunteersForm
from tems.teams.selectors import door_volunteers, overseer_of, team_name
from tems.teams.services import doors_set
from tems.templatetags.when import when_text


@require_GET
def event_list(request: HttpRequest) -> HttpResponse:
    """Upcoming events, or those the search and filters find; visitors who are not logged in see the public ones."""
    if not _searching(request):
        if not request.user.is_authenticated:
            return _search_page(request, EventSearchForm(request.GET))
        return _event_page(request, past=False)
    return _search_page(request, EventSearchForm(request.GET))


FILTERS = ("from", "to", "category", "organizer", "mode", "free")


def _searching(request: HttpRequest) -> bool:
    return any(request.GET.get(name) for name in ("q", *FILTERS))


def _filtering(request: HttpRequest) -> bool:
    return any(request.GET.get(name) for name in FILTERS)


def _search_page(request: HttpRequest, form: EventSearchForm) -> HttpResponse:
    context = {"past": False, "form": form, "searching": _searching(request), "filtering": _filtering(request),
               "continued": bool(request.GET.get("cursor"))}
    try:
        filters = form.filters(public_only=not request.user.is_authenticated)
        page, seats = event_selectors.event_search(filters=filters, **page_args(request))
    except DomainError as error:
        return render(request, "registrations/event_list.html", {**context, "events": [], "error": error.detail},
                      status=400)
    cards = event_selectors.event_cards(events=page.items, seats=seats, user_id=_student(request))
    template = "registrations/event_list.html"
    if request.htmx and context["continued"]:
        template += "#event-page"
    return render(request, template, {**context, "events": page.items, "next_url": next_page_url(request, page),
                                      "cards": cards})


def _student(request: HttpRequest) -> str | None:
    """Whose standing the cards show: the person logged in, or nobody."""
    return user_key(request.user) if request.user.is_authenticated else None


MONTH = re.compile(r"^(\d{4})-(\d{2})$")


@require_GET
def event_calendar(request: HttpRequest) -> HttpResponse:
    """A month of events as a calendar (``?month=YYYY-MM``, this month by default), with the list's filters."""
    form = EventSearchForm(request.GET)
    today = timezone.localdate()
    context = {"form": form, "events": [], "filtering": _filtering(request), "searching": _searching(request)}
    try:
        year, month = _month(request.GET.get("month"), today)
        filters = form.filters(public_only=not request.user.is_authenticated)
        events, seats, more = event_selectors.event_month(filters=filters, year=year, month=month)
    except DomainError as error:
        return render(request, "registrations/event_calendar.html", {**context, "error": error.detail}, status=400)
    first = date(year, month, 1)
    by_day: dict[date, list] = {}
    for event in events:
        by_day.setdefault(timezone.localdate(event.starts_at), []).append((event, seats[event.event_id]))
    weeks = calendar.Calendar().monthdatescalendar(year, month)
    days = [(day, by_day.get(day, [])) for week in weeks for day in week if day.month == month]
    previous = (first - timedelta(days=1)).strftime("%Y-%m")
    following = (first + timedelta(days=31)).replace(day=1).strftime("%Y-%m")
    params = request.GET.copy()
    params.pop("month", None)
    params.pop("cursor", None)
    return render(request, "registrations/event_calendar.html", {
        **context, "events": events, "first": first, "days": days, "offset": first.weekday(), "today": today,
        "more": more,
        "previous": previous if year > 1900 or month > 1 else None,
        "following": following if year < 9998 or month < 12 else None, "filters": params.urlencode(),
        "weekdays": list(calendar.day_abbr)})


def _month(raw: str | None, today: date) -> tuple[int, int]:
    if raw in (None, ""):
        return today.year, today.month
    match = MONTH.match(raw)
    if not match or not 1900 <= int(match[1]) <= 9998 or not 1 <= int(match[2]) <= 12:
        raise RegistrationError("invalid", "Choose a month as year and month, such as 2027-03.",
                                errors={"month": ["Choose a month as year and month, such as 2027-03."]})
    return int(match[1]), int(match[2])


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
    # A past event's card has no pill: there is nothing left to register for.
    cards = event_selectors.event_cards(events=page.items, seats=selectors.seat_counts(events=page.items),
                                        user_id=None if past else _student(request))
    template = "registrations/event_list.html"
    if request.htmx:
        template += "#event-page"
    return render(request, template, {"past": past, "events": page.items, "cards": cards,
                                      "next_url": next_page_url(request, page),
                                      "continued": bool(request.GET.get("cursor")),
                                      "form": None if past else EventSearchForm()})


@require_GET
@never_cache  # Back must not show a seat count or a panel from before the last tap
def event_detail(request: HttpRequest, event_id: str) -> HttpResponse:
    event = event_or_404(event_id)
    if event.is_draft and not (request.user.is_authenticated and draft_visible_to(request.user, event)):
        raise Http404("There is no such event.")
    if not request.user.is_authenticated:
        if not event.public:
            return redirect_to_login(request.get_full_path())
        return render(request, "registrations/event_detail.html",
                      {"event": event, "seats": selectors.seats_for(event=event), "team_name": team_name(event.team)})
    context = {**panel_context(request, event), "team_name": team_name(event.team)}
    # The staff links and panels each role's rights allow (tems.permissions); the team comes with the event.
    may = {name: holds(request.user, permission, team=event.team, event_id=event_id)
           for name, permission in (("manage", EVENT_MANAGE), ("door", EVENT_DOOR), ("doors", EVENT_DOORS))}
    context["may"] = may
    context["may_publish"] = event.is_draft and holds(request.user, EVENT_APPROVE, team=overseer_of(event.team))
    registration = context.get("registration")
    # The online link is for people with a place (and the event's staff), not for everyone who finds the page.
    context["show_online_url"] = may["manage"] or may["door"] or bool(
        registration and registration.get("status") == "confirmed")
    context["my_messages"] = selectors.messages_to(user_id=user_key(request.user), event_id=event_id)
    if may["door"]:
        context["checkins"] = checkin_selectors.checkin_list(event_id=event_id)
    return render(request, "registrations/event_detail.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def event_create(request: HttpRequest) -> HttpResponse:
    posted = request.method == "POST"
    editor = (question_forms.posted_editor(request.POST) if question_forms.has_editor(request.POST)
              else question_forms.editor(()))
    action = question_forms.editor_action(request.POST) if posted else None
    if action is not None:
        # A question moved, added or previewed: the form again, its fields as typed and not yet checked.
        form, preview, status = EventForm(initial=request.POST.dict(), user=request.user), None, 200
        if action == question_forms.PREVIEW:
            preview, status = _questions_preview(editor)
        else:
            editor = question_forms.rearranged(editor, action)
        return _create_page(request, form, editor, preview=preview, status=status)
    form = EventForm(request.POST or None, user=request.user)
    # A post without the editor (an older page, a script) creates the event without questions.
    questions = question_forms.posted_questions(editor) if question_forms.has_editor(request.POST) else []
    if posted and form.is_valid() and questions is not None:
        user_id = user_key(request.user)
        team = form.cleaned_data["team"]
        try:
            outcome = event_services.event_create_once(
                **form.cleaned_data, team_name=team_name(team), user_id=user_id,
                created_by=request.user.get_username(),
                idempotency_key=key_from_request(request),
                fingerprint=request_fingerprint(request), questions=questions, actor=actor_of(request),
            )
        except DomainError as error:
            if error.code == "invalid" and error.errors:
                rest = question_forms.attach_errors(editor, error.errors)
                form.add_error(None, " ".join(rest) or "Some questions are not valid: see below.")
            else:
                form.add_error(None, error.detail)
        else:
            return _created(request, outcome)
    return _create_page(request, form, editor)


def _created(request: HttpRequest, outcome: StoredOutcome, *, copy_of: str = "") -> HttpResponse:
    """The new event's page, "Created" said once: a replayed tap (the same key again) created nothing new."""
    event = outcome.data
    if not outcome.replayed:
        source = f", a copy of “{copy_of}”" if copy_of else ""
        messages.success(request, f"Created “{event['title']}”{source}.")
    return redirect("registrations:event_detail", event_id=event["id"])


def _questions_preview(editor) -> tuple[list[dict] | None, int]:
    questions = question_forms.posted_questions(editor)
    if questions is None:
        return None, 400
    try:
        return question_forms.preview_fields(questions), 200
    except RegistrationError as error:
        question_forms.attach_errors(editor, error.errors)
        return None, 400


def _create_page(request: HttpRequest, form, editor, *, preview: list[dict] | None = None,
                 status: int = 200) -> HttpResponse:
    # One key per form shown: each press of "Create event" on this page is the same tap until it succeeds.
    return render(request, "registrations/event_form.html",
                  {"form": form, "creating": True, "fresh_key": str(uuid.uuid4()), "editor": editor,
                   "preview": preview, "max_questions": MAX_QUESTIONS}, status=status)


@require_http_methods(["GET", "POST"])
@login_required
def event_copy(request: HttpRequest, event_id: str) -> HttpResponse:
    """A new event prefilled from ``event_id`` (its questions come along); one tap of "Create event" makes one."""
    source = event_or_404(event_id)
    asked = questions_get(event_id=event_id).questions
    if request.method == "GET":
        # The form shows times as datetimes (an ISO string with its offset is no value for a datetime-local input).
        values = edits.as_datetimes(event_form_values(source))
        if source.starts_at <= utcnow():
            # The old times are offered only while they are still ahead: a copy is usually for another date.
            values.update(dict.fromkeys(edits.TIMES))
        form = EventForm(initial={**values, "team": source.team}, user=request.user)
    else:
        form = EventForm(request.POST, user=request.user)
        if form.is_valid():
            team = form.cleaned_data["team"]
            try:
                outcome = event_services.event_copy_once(
                    source_event_id=event_id, **form.cleaned_data, team_name=team_name(team),
                    user_id=user_key(request.user),
                    created_by=request.user.get_username(), idempotency_key=key_from_request(request),
                    fingerprint=request_fingerprint(request), actor=actor_of(request))
            except DomainError as error:
                form.add_error(None, error.detail)
            else:
                return _created(request, outcome, copy_of=source.title)
    return render(request, "registrations/event_form.html",
                  {"form": form, "creating": True, "copy_of": source, "copied_questions": len(asked),
                   "fresh_key": str(uuid.uuid4())})


LABELS = {"title": "Title", "location": "Venue", "starts_at": "Starts", "capacity": "Capacity",
          "description": "Description", "reminder_hours": "Reminder (hours before)",
          "offer_hours": "Offer window (hours)", "ends_at": "Ends", "time_zone": "Time zone", "map_url": "Map link",
          "online_url": "Online link", "category": "Category", "organizer": "Organizer", "public": "Listed publicly",
          "registration_opens_at": "Registration opens", "registration_closes_at": "Registration closes"}


def _base_scope(event_id: str, version: int) -> str:
    return f"event:{event_id}:v{version}"


def _edit_initial(event_id: str, values: dict, version: int) -> dict:
    """Form values for ``values`` (canonical, tems.merge) at ``version``, with the signed base they came from."""
    values = edits.canonical(values)
    return {**edits.as_datetimes(values), "version": version,
            "base": sign_base(values, scope=_base_scope(event_id, version))}


@require_http_methods(["GET", "POST"])
@login_required
def event_edit(request: HttpRequest, event_id: str) -> HttpResponse:
    template = "registrations/event_form.html#event-form" if request.htmx else "registrations/event_form.html"
    if request.method == "GET":
        event = event_or_404(event_id)
        form = EventEditForm(initial=_edit_initial(event_id, _initial(event), int(event.version)))
        return render(request, template, {"form": form, "event": event})

    base = _posted_base(request, event_id)
    form = EventEditForm(_omitted_kept(request.POST, base=base, event_id=event_id),
                         opened_starts_at=base and datetime.fromisoformat(base["starts_at"]))
    conflict = None
    if form.is_valid():
        data = dict(form.cleaned_data)
        expected_version = data.pop("version")
        data.pop("base")
        try:
            outcome = edits.event_edit(event_id=event_id, expected_version=expected_version, base=base, mine=data,
                                       updated_by=request.user.get_username(), actor=actor_of(request))
        except RegistrationError as error:
            if error.code == "not_found":
                raise Http404(error.detail) from None
            if error.code == "conflict" and "merge" in error.extra:
                conflict = _conflict(event_id, error, data)
                current = error.extra["current"]
                # Nothing is written until they decide: the form holds the merge and is based on their version.
                initial = _edit_initial(event_id, current, int(current["version"]))
                merged = error.extra["merge"].values
                form = EventEditForm(initial={**initial, **edits.as_datetimes(merged)})
            else:
                add_error_to_form(form, error)
        else:
            note = " Kept the changes saved meanwhile by someone else." if outcome.merge else ""
            messages.success(request, _saved_notice(outcome.saved) + note)
            return after_save(request, reverse("registrations:event_detail", kwargs={"event_id": event_id}))
    event = event_or_404(event_id)
    return render(request, template, {"form": form, "event": event, "conflict": conflict},
                  status=conflict_status(request, conflict))


def _omitted_kept(posted, *, base: dict | None, event_id: str):
    """The posted edit with each field it leaves out (a form without the offer window, a script posting a few
    fields) set to the value the page was opened with, or else the stored one: left out is kept, never emptied.
    A field sent empty is still the form's to read (an empty offer window is "off")."""
    missing = [name for name in edits.EDITED_FIELDS if name not in posted]
    if not missing:
        return posted
    opened = base or event_form_values(event_or_404(event_id))
    posted = posted.copy()
    for name in missing:
        value = opened[name]
        posted[name] = "" if value is None else str(value)  # a start as ISO 8601, which the form reads too
    return posted


def _posted_base(request: HttpRequest, event_id: str) -> dict | None:
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        return None
    return load_base(request.POST.get("base", ""), scope=_base_scope(event_id, version), fields=edits.EDITED_FIELDS)


def _conflict(event_id: str, error: RegistrationError, mine: dict) -> dict:
    return conflict_panel(error=error, title="Someone else saved this event while you were editing",
                          theirs=edits.canonical(error.extra["current"]), mine=edits.canonical(mine), labels=LABELS,
                          show=_shown, discard_url=reverse("registrations:event_edit", kwargs={"event_id": event_id}),
                          target="event-form", form_id="event-edit-form")


def _shown(value) -> str:
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        # A start (canonical ISO): shown as people read dates, in the site's time zone.
        return when_text(value)
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if value in CATEGORY_LABELS:
        return CATEGORY_LABELS[value]
    return "(empty)" if value is None or value == "" else str(value)


def _saved_notice(saved: event_services.EventUpdate) -> str:
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
        **{name: getattr(event, name) for name in event_services.DETAILS},
    }


@require_http_methods(["GET", "POST"])
@login_required
def event_doors(request: HttpRequest, event_id: str) -> HttpResponse:
    """The team admin's choice of which of the team's door volunteers work this event's door."""
    event = event_or_404(event_id)
    volunteers = door_volunteers(team_id=event.team, event_id=event_id) if event.team else []
    choices = [(member.pk, member.user.get_full_name() or member.user.get_username()) for member, _ in volunteers]
    # Bound on every post: nobody ticked is an empty post, and a choice too (unassign them all).
    form = DoorVolunteersForm(request.POST if request.method == "POST" else None, choices=choices,
                              initial={"volunteers": [member.pk for member, assigned in volunteers if assigned]})
    status = 200
    if request.method == "POST":
        if event.team and form.is_valid():
            try:
                doors_set(team_id=event.team, event_id=event_id, membership_ids=set(form.cleaned_data["volunteers"]),
                          actor=actor_of(request))
            except DomainError as error:
                form.add_error("volunteers", error.detail)
            else:
                messages.success(request, "Saved who works the door.")
                return redirect("registrations:event_doors", event_id=event_id)
        status = 400
    return render(request, "registrations/event_doors.html", {"event": event, "form": form}, status=status)


@require_GET
@login_required
def event_log(request: HttpRequest, event_id: str) -> HttpResponse:
    """Who changed the event, sent its messages, checked people in and read its attendee list (tems.audit)."""
    event = event_or_404(event_id)
    return log_page(
        request, heading=f"Log of “{event.title}”", team=event.team,
        intro="Every change to this event, its messages and check-ins, and every look at its attendee list.",
        crumbs=[("Events", reverse("registrations:event_list")),
                (event.title, reverse("registrations:event_detail", kwargs={"event_id": event_id}))],
        read=partial(audit_selectors.event_log, event_id=event_id),
        retention_days=actor_of(request).retention_days(event.team),
        actions={name: label for name, label in ACTIONS.items() if name in EVENT_ACTIONS})
