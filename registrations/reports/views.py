"""Staff's report of an event: the page (figures and the per-day chart) and its CSV."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from registrations.errors import RegistrationError
from registrations.reports import output
from registrations.reports.selectors import EventReport, event_report


def _report_or_404(event_id: str) -> EventReport:
    try:
        return event_report(event_id=event_id)
    except RegistrationError as error:
        raise Http404(error.detail) from None


@require_GET
@login_required
@never_cache
def report_page(request: HttpRequest, event_id: str) -> HttpResponse:
    report = _report_or_404(event_id)
    return render(request, "registrations/event_report.html", {
        "report": report, "figures": output.figures(report), "days": output.all_days(report),
        "chart": output.registrations_chart(report)})


@require_GET
@login_required
def report_csv(request: HttpRequest, event_id: str) -> HttpResponse:
    response = HttpResponse(output.report_csv(_report_or_404(event_id)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="report-{event_id}.csv"'
    return response
