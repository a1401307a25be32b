"""The double-click lab (/lab/ and /api/lab/...): staff always, everyone logged in when TEMS_DEMO is on."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from lab import lost_update_race as inventory_lab
from lab import registration_race as registration_lab
from lab.chart import bar_chart_svg
from lab.forms import LostUpdateForm, RegistrationRaceForm
from lab.models import lab_run_save, lab_runs_recent, lab_slot
from lab.scoreboard import scoreboard_last_run
from lab.techniques import inventory as inventory_techniques
from lab.techniques import registration as registration_techniques
from registrations import selectors as registration_selectors
from registrations.views import with_standing
from tems.api import api_view, json_response, parse_form, problem
from tems.errors import DomainError
from tems.http import after_save
from tems.identity import user_key


def can_use_lab(user) -> bool:
    return user.is_authenticated and (user.is_staff or settings.TEMS_DEMO)


def lab_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @login_required
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not can_use_lab(request.user):
            raise PermissionDenied("The lab is for staff (and for everyone in demo mode).")
        return view(request, *args, **kwargs)

    return wrapper


def _lab_api(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @functools.wraps(view)
    def wrapper(request: HttpRequest) -> HttpResponse:
        if not can_use_lab(request.user):
            return problem(403, "The lab is for staff (and for everyone in demo mode).")
        return view(request)

    return api_view("POST")(wrapper)


# --- the races --------------------------------------------------------------------------------------------

def _kept_run(*, measure: Callable[[], dict], kind: str, technique: str, params: dict) -> dict:
    """Run one measurement in a lab slot (DomainError 'busy' when every slot is taken) and keep it in the runs."""
    with lab_slot():
        result = measure()
    lab_run_save(kind=kind, technique=technique, params=params, result=result)
    return result


def _registration_race(data: dict) -> dict:
    return _kept_run(measure=lambda: registration_lab.registration_race(**data), kind="registration",
                     technique=data["technique"], params=data)


def _lost_update_race(data: dict) -> dict:
    return _kept_run(measure=lambda: inventory_lab.lost_update_race(**data), kind="lost-update",
                     technique=data["technique"], params=data)


@_lab_api
def api_registration_race(request: HttpRequest) -> HttpResponse:
    form = parse_form(request, RegistrationRaceForm)
    result = _registration_race(form.cleaned_data)
    return json_response({k: v for k, v in result.items() if k in RegistrationRaceForm.API_FIELDS})


@_lab_api
def api_lost_update(request: HttpRequest) -> HttpResponse:
    form = parse_form(request, LostUpdateForm)
    result = _lost_update_race(form.cleaned_data)
    return json_response({k: v for k, v in result.items() if k in LostUpdateForm.API_FIELDS})


# --- pages ------------------------------------------------------------------------------------------------

def _race_settings(result: dict) -> tuple:
    return result["taps"], result["same_key"], result["latency_ms"]


def _describe_settings(taps: int, same_key: bool, latency_ms: int) -> str:
    keys = "one shared key" if same_key else "one key per tap"
    return f"{taps} tap{'s' if taps != 1 else ''}, {keys}, {latency_ms} ms delay"


def _registration_context(form: RegistrationRaceForm | None = None, error: str | None = None) -> dict:
    runs = [{**run.result_dict, "label": registration_techniques.TECHNIQUES[run.technique].label}
            for run in lab_runs_recent(kind="registration", limit=10)]
    chart = ""
    if runs:
        # Records created depend on the taps and the delay as much as on the technique: the chart compares only
        # runs made with the newest run's settings, and its title says which settings those are.
        settings_shown = _race_settings(runs[0])
        latest: dict[str, dict] = {}
        for run in runs:
            if _race_settings(run) == settings_shown:
                latest.setdefault(run["technique"], run)
        bars = [(latest[name]["label"], latest[name]["records_created"])
                for name in registration_techniques.RACE_TECHNIQUES if name in latest]
        chart = bar_chart_svg(title="Registrations created, latest run per technique",
                              subtitle=f"All with {_describe_settings(*settings_shown)}", bars=bars, good_max=1)
    return {"race_form": form or RegistrationRaceForm(auto_id="race_%s"), "race_runs": runs, "race_chart": chart,
            "race_error": error}


def _lost_update_context(form: LostUpdateForm | None = None, error: str | None = None) -> dict:
    runs = [{**run.result_dict, "label": inventory_techniques.TECHNIQUES[run.technique].label}
            for run in lab_runs_recent(kind="lost-update", limit=10)]
    return {"lost_form": form or LostUpdateForm(auto_id="lost_%s"), "lost_runs": runs, "lost_error": error}


def _costs_context() -> dict:
    runs = lab_runs_recent(kind="costs", limit=1)
    costs = runs[0].result_dict if runs else {}
    return {"decision_rows": registration_lab.decision_rows(costs),
            "costs_measured_at": runs[0].created_at if runs else None}


def _scoreboard_context() -> dict:
    runs = lab_runs_recent(kind="last-seat", limit=1)
    return {"scoreboard": scoreboard_last_run(), "last_seat": runs[0].result_dict if runs else None,
            "last_seat_at": runs[0].created_at if runs else None}


def _tryit_event(request: HttpRequest, *, fresh: bool = False):
    """The caller's own scratch event for the real Register button (replaced on "start over")."""
    return registration_lab.tryit_event(user_id=user_key(request.user), fresh=fresh)


def _tryit_context(request: HttpRequest, *, fresh: bool = False) -> dict:
    event = _tryit_event(request, fresh=fresh)
    claim = registration_selectors.claim_get(event_id=event.event_id, user_id=user_key(request.user))
    registration = (with_standing(registration_selectors.registration_view(registration=claim), event)
                    if claim else None)
    return {"event": event, "seats": registration_selectors.seats_for(event=event), "registration": registration,
            "fresh_key": str(uuid.uuid4()), "notice": None}


@require_GET
@lab_page
def lab_index(request: HttpRequest) -> HttpResponse:
    return render(request, "lab/index.html", _page_context(request))


def _page_context(request: HttpRequest) -> dict:
    """Every section of the lab's page as it stands now."""
    return {**_registration_context(), **_lost_update_context(), **_costs_context(), "tryit": _tryit_context(request),
            **_scoreboard_context()}


def _race_page(request: HttpRequest, *, form: RegistrationRaceForm | LostUpdateForm, run: Callable[[dict], dict],
               section: str, section_context: Callable[..., dict]) -> HttpResponse:
    """Fire a race from a page form: redirect back after a plain post, swap the section in for htmx."""
    error = None
    if form.is_valid():
        try:
            run(form.cleaned_data)
        except DomainError as caught:
            error = caught.detail
        if not request.htmx and error is None:
            return redirect(reverse("lab:index") + f"#{section}")
    context = section_context(form, error)
    if request.htmx:
        return render(request, f"lab/index.html#{section}", context)
    return render(request, "lab/index.html", {**_page_context(request), **context})


@require_POST
@lab_page
def lab_registration_race(request: HttpRequest) -> HttpResponse:
    return _race_page(request, form=RegistrationRaceForm(request.POST, auto_id="race_%s"), run=_registration_race,
                      section="registration-race", section_context=_registration_context)


@require_POST
@lab_page
def lab_lost_update(request: HttpRequest) -> HttpResponse:
    return _race_page(request, form=LostUpdateForm(request.POST, auto_id="lost_%s"), run=_lost_update_race,
                      section="lost-update", section_context=_lost_update_context)


def _measured_page(request: HttpRequest, *, measure: Callable[[], dict], kind: str, technique: str, params: dict,
                   section: str, section_context: Callable[[], dict]) -> HttpResponse:
    """Run one measurement in a lab slot and keep it: the section swapped in for htmx, a redirect back after a
    plain post; all slots taken is said as a message, nothing measured."""
    try:
        _kept_run(measure=measure, kind=kind, technique=technique, params=params)
    except DomainError as busy:
        messages.error(request, busy.detail)
        return after_save(request, reverse("lab:index") + f"#{section}")
    if request.htmx:
        return render(request, f"lab/index.html#{section}", section_context())
    return redirect(reverse("lab:index") + f"#{section}")


@require_POST
@lab_page
def lab_costs(request: HttpRequest) -> HttpResponse:
    return _measured_page(request, measure=registration_lab.technique_costs, kind="costs", technique="all", params={},
                          section="decision-table", section_context=_costs_context)


@require_POST
@lab_page
def lab_last_seat(request: HttpRequest) -> HttpResponse:
    """The scoreboard's last-seat row, run live: six taps on one seat, through TEMS and the check-then-take."""
    return _measured_page(request, measure=registration_lab.last_seat_race, kind="last-seat", technique="both",
                          params={"taps": registration_lab.LAST_SEAT_TAPS}, section="scoreboard",
                          section_context=_scoreboard_context)


@require_GET
@lab_page
def lab_tryit(request: HttpRequest) -> HttpResponse:
    """The try-it panel alone, so the lab's script can refresh it after a burst of taps."""
    return render(request, "lab/index.html#tryit-panel", {"tryit": _tryit_context(request)})


@require_POST
@lab_page
def lab_tryit_reset(request: HttpRequest) -> HttpResponse:
    context = {"tryit": _tryit_context(request, fresh=True)}
    if request.htmx:
        return render(request, "lab/index.html#tryit", context)
    return redirect(reverse("lab:index") + "#tryit")
