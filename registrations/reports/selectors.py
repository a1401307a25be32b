"""The report of an event, read from its counters: the event (with its seat shards) and one Query per report slot,
never a scan or a read of its registrations."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date

from registrations import selectors
from registrations.reports.models import (
    ACCEPT_BUCKET_MINUTES,
    ACCEPT_HISTOGRAM,
    COUNTERS,
    OFFERS_ACCEPTED,
    OFFERS_DECLINED,
    OFFERS_EXPIRED,
    OFFERS_MADE,
    REGISTRATIONS,
    REPORT_SLOTS,
    WAITING_JOINED,
    WAITING_LEFT,
    EventReportDay,
)
from tems.clock import utcnow


@dataclass(frozen=True)
class ReportDay:
    day: date
    registrations: int  # made that day and still standing
    waiting_at_end: int  # on the waiting list when the day ended (UTC)


@dataclass(frozen=True)
class EventReport:
    """An event's figures, as the report page and its CSV show them."""

    event_id: str
    title: str
    capacity: int
    started: bool
    registered: int  # standing registrations: with a seat, offered one, or waiting
    seated: int  # holding a seat (confirmed, or offered)
    waiting: int
    checked_in: int
    offers_made: int
    offers_accepted: int
    offers_declined: int
    offers_expired: int
    waiting_peak: int  # the most people waiting at the end of any day (UTC)
    # The median time to accept, as the bounds (minutes) of the histogram bucket it falls in; None: no accept.
    median_accept_minutes: tuple[int, int] | None
    days: list[ReportDay] = field(default_factory=list)

    @property
    def no_shows(self) -> int:
        return max(self.seated - self.checked_in, 0)

    @property
    def no_show_share(self) -> float | None:
        """Of the seats held, the share nobody checked in for; None before the start (nobody is a no-show yet)."""
        if not self.started or not self.seated:
            return None
        return self.no_shows / self.seated

    @property
    def offers_open(self) -> int:
        return self.offers_made - self.offers_accepted - self.offers_declined - self.offers_expired

    @property
    def registrations_per_day(self) -> list[tuple[date, int]]:
        return [(day.day, day.registrations) for day in self.days]


def report_days(event_id: str, *, shards: int = REPORT_SLOTS) -> list[EventReportDay]:
    """Every day item of the event of ``shards`` seat shards, over its slots (one Query each, as the attendee list
    reads its buckets): a slot is a shard, and an event's shard count never shrinks."""
    return [item for slot in range(min(int(shards), REPORT_SLOTS))
            for item in EventReportDay.query(EventReportDay.pk_for(event_id, slot),
                                             EventReportDay.sk.startswith(EventReportDay.SK_PREFIX))]


def median_bucket(histogram: list[int]) -> tuple[int, int] | None:
    """The (lower, upper) minutes of the bucket holding the median of ``histogram`` (counts per
    ACCEPT_BUCKET_MINUTES bucket); None when it is empty. For an even count, the lower middle one's bucket."""
    total = sum(histogram)
    if not total:
        return None
    middle, seen = (total + 1) // 2, 0
    for index, count in enumerate(histogram):
        seen += count
        if seen >= middle:
            return (ACCEPT_BUCKET_MINUTES[index - 1] if index else 0), ACCEPT_BUCKET_MINUTES[index]
    raise AssertionError("unreachable: the counts add up to total")


def event_report(*, event_id: str) -> EventReport:
    """The event's report. Raises RegistrationError 'not_found'."""
    event = selectors.event_get(event_id=event_id)
    seats = selectors.seats_for(event=event)
    items = report_days(event_id, shards=int(event.seat_shards or REPORT_SLOTS))
    totals: Counter = Counter()
    by_day: dict[str, Counter] = {}
    for item in items:
        day = by_day.setdefault(item.day, Counter())
        for name in COUNTERS:
            amount = int(getattr(item, name) or 0)
            totals[name] += amount
            day[name] += amount
        for bucket, name in enumerate(ACCEPT_HISTOGRAM):
            totals[bucket] += int(getattr(item, name) or 0)
    days, waiting, peak = [], 0, 0
    for day in sorted(by_day):
        waiting += by_day[day][WAITING_JOINED] - by_day[day][WAITING_LEFT]
        peak = max(peak, waiting)
        days.append(ReportDay(date.fromisoformat(day), by_day[day][REGISTRATIONS], waiting))
    return EventReport(
        event_id=event_id, title=event.title, capacity=int(event.capacity), started=event.starts_at <= utcnow(),
        registered=totals[REGISTRATIONS], seated=seats.registered, waiting=seats.waiting,
        checked_in=int(event.checked_in_count or 0), offers_made=totals[OFFERS_MADE],
        offers_accepted=totals[OFFERS_ACCEPTED], offers_declined=totals[OFFERS_DECLINED],
        offers_expired=totals[OFFERS_EXPIRED], waiting_peak=peak,
        median_accept_minutes=median_bucket([totals[bucket] for bucket in range(len(ACCEPT_BUCKET_MINUTES))]),
        days=days,
    )
