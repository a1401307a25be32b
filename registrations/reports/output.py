"""The report as people read it: its figures in order (the page and the CSV share them) and the bars of the
registrations-per-day chart, drawn on the server as SVG (no script, nothing fetched from elsewhere)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import date, timedelta

from registrations.reports.selectors import EventReport


def minutes_text(minutes: int) -> str:
    if minutes < 60:
        return f"{minutes} min"
    hours = minutes / 60
    if hours < 48:
        return f"{hours:g} h"
    return f"{hours / 24:g} days"


def figures(report: EventReport) -> list[tuple[str, str]]:
    """(label, value) of every figure, in the order the page and the CSV show them."""
    share = report.no_show_share
    median = report.median_accept_minutes
    return [
        ("Registered", str(report.registered)),
        ("With a seat", str(report.seated)),
        ("Waiting now", str(report.waiting)),
        ("Checked in", str(report.checked_in)),
        ("No-show share", "known after the start" if share is None
         else f"{share:.0%} ({report.no_shows} of {report.seated})"),
        ("Waiting list peak", str(report.waiting_peak)),
        ("Offers made", str(report.offers_made)),
        ("Offers accepted", str(report.offers_accepted)),
        ("Offers declined", str(report.offers_declined)),
        ("Offers expired", str(report.offers_expired)),
        ("Offers still open", str(report.offers_open)),
        ("Median time to accept", "no accepts yet" if median is None
         else f"{minutes_text(median[0])} to {minutes_text(median[1])}"),
    ]


def all_days(report: EventReport) -> list[tuple[date, int, int]]:
    """(day, registrations made that day still standing, waiting at its end) for every day from the first
    counted to the last, days without a change included."""
    if not report.days:
        return []
    known = {day.day: day for day in report.days}
    rows, waiting = [], 0
    day, last = report.days[0].day, report.days[-1].day
    while day <= last:
        if day in known:
            waiting = known[day].waiting_at_end
        rows.append((day, known[day].registrations if day in known else 0, waiting))
        day += timedelta(days=1)
    return rows


def report_csv(report: EventReport) -> str:
    """The figures, then the days: ``figure,day,value`` rows (a day only on the per-day rows)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["figure", "day", "value"])
    for label, value in figures(report):
        writer.writerow([label, "", value])
    for day, registrations, waiting in all_days(report):
        writer.writerow(["Registrations made that day, still standing", day.isoformat(), registrations])
        writer.writerow(["Waiting at the end of the day", day.isoformat(), waiting])
    return buffer.getvalue()


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    day: date
    value: int


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    top: int  # the value a full-height bar stands for
    baseline: float


# The SVG holds only the bars (it scales to the card); its labels are HTML under it, so they keep the page's size.
CHART_HEIGHT = 160
CHART_WIDTH = 640
LABEL_ROOM = 2  # above the tallest bar and below the axis, so neither is cut off


def registrations_chart(report: EventReport) -> Chart | None:
    """Bars of registrations per day over ``all_days``, scaled to a fixed viewBox; None without any day."""
    rows = all_days(report)
    if not rows:
        return None
    top = max(1, *(registrations for _, registrations, _ in rows))
    slot = CHART_WIDTH / len(rows)
    plot = CHART_HEIGHT - 2 * LABEL_ROOM
    baseline = CHART_HEIGHT - LABEL_ROOM
    bars = []
    for index, (day, registrations, _) in enumerate(rows):
        height = plot * max(registrations, 0) / top
        bars.append(Bar(x=round(index * slot + slot * 0.1, 2), y=round(baseline - height, 2),
                        width=round(slot * 0.8, 2), height=round(height, 2), day=day, value=registrations))
    return Chart(width=CHART_WIDTH, height=CHART_HEIGHT, bars=bars, top=top, baseline=baseline)
