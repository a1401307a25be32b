"""Staff's attendee list of an event: a page at a time, filtered and searched, and its CSV export."""

import itertools

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from registrations import attendees, selectors
from registrations.questions import question_sets
from registrations.views import event_or_404
from tems import audit
from tems.audit.wording import ATTENDEES_DOWNLOADED, ATTENDEES_VIEWED
from tems.errors import DomainError
from tems.pagination import next_page_url, page_args

CSV_BOM = "\ufeff"


@require_GET
@login_required
def attendee_list(request: HttpRequest, event_id: str) -> HttpResponse:
    event = event_or_404(event_id)
    status, search = request.GET.get("status") or "", request.GET.get("q") or ""
    try:
        page = attendees.attendee_page(event_id=event_id, status=status, search=search, **page_args(request))
    except DomainError as error:  # unknown status, too long a search, a stale cursor: say so, list from the top
        messages.error(request, error.detail)
        return redirect("registrations:attendee_list", event_id=event_id)
    # Names read by staff: one audit entry for the request (its own PutItem: nothing else is written).
    audit.record_read(actor=audit.actor_of(request), action=ATTENDEES_VIEWED, team=event.team, event_id=event_id)
    for row in page.items:
        row["answer_lines"] = [(a.get("label"), question_sets.answer_text(a.get("value"))) for a in row["answers"]]
    context = {"event": event, "attendees": page.items, "next_url": next_page_url(request, page),
               "status": status, "q": search, "statuses": attendees.STATUSES}
    if request.htmx and request.GET.get("cursor"):
        return render(request, "registrations/attendee_list.html#attendee-rows", context)
    context["totals"] = attendees.attendee_totals(event=event, seats=selectors.seats_for(event=event))
    return render(request, "registrations/attendee_list.html", context)


@require_GET
@login_required
def attendee_export(request: HttpRequest, event_id: str) -> HttpResponse:
    event = event_or_404(event_id)
    try:
        lines = attendees.attendee_csv(event_id=event_id, status=request.GET.get("status"),
                                       search=request.GET.get("q"),
                                                                                                      asked=question_sets.questions_get(event_id=event_id))
        first = next(lines)  # checks the filters before the 200 is committed to
    except DomainError as error:
        messages.error(request, error.detail)
        return redirect("registrations:attendee_list", event_id=event_id)
    audit.record_read(actor=audit.actor_of(request), action=ATTENDEES_DOWNLOADED, team=event.team,
                      event_id=event_id)
    # The byte-order mark makes spreadsheets (Excel above all) read the file as UTF-8: "Inés", not "InÃ©s".
    response = StreamingHttpResponse(itertools.chain([CSV_BOM, first], lines), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="attendees-{event.event_id}.csv"'
    return response

