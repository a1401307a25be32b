"""The event report: counters written by the transactions that change them, read without a scan, recounted by
the invariant (DynamoDB Local: the counts ride on transactions)."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest

from registrations import services
from registrations.offers import services as offer_services
from registrations.reports import output
from registrations.reports.models import ACCEPT_BUCKET_MINUTES, EventReportDay, accept_attribute, accept_bucket
from registrations.reports.selectors import event_report, median_bucket
from registrations.seating import shards
from tems.clock import utcnow
from tests.helpers import assert_invariants_clean, broken_invariants
from tests.registrations.helpers import make_event, new_key, register

REPORT_CHECK = "every report figure equals a recount of the items it counts"


def report_items() -> list[EventReportDay]:
    return list(EventReportDay.scan(filter_condition=EventReportDay.entity == "EventReportDay"))


def cancel(user_id: str, registration_id: str) -> None:
    services.registration_cancel_once(user_id=user_id, registration_id=registration_id, idempotency_key=new_key(),
                                      fingerprint=f"cancel:{registration_id}")


def test_registrations_waiting_and_promotions_are_counted(ddb):
    event = make_event(capacity=1)
    first = register(event.event_id, "ann").data
    waiting = [register(event.event_id, name).data for name in ("bo", "cy", "di")]
    cancel("ann", first["registration_id"])  # bo is promoted into the freed seat
    cancel("di", waiting[2]["registration_id"])  # di leaves the waiting list
    report = event_report(event_id=event.event_id)
    assert (report.registered, report.seated, report.waiting) == (2, 1, 1)
    # Three joined, bo promoted and di gone: one still waits; at the end of today three had joined, two left.
    assert report.waiting_peak == 1 and report.offers_made == 0
    assert report.registrations_per_day == [(datetime.now(UTC).date(), 2)]
    assert_invariants_clean()


def test_a_day_item_is_counted_by_add_in_the_transaction_of_the_change(ddb, dynamodb_calls):
    event = make_event(capacity=5)
    dynamodb_calls.clear()
    register(event.event_id, "ann")
    # One request, as before the report: the count rides on the registration's own transaction.
    assert dynamodb_calls.count("TransactWriteItems") == 1
    items = report_items()
    assert len(items) == 1 and int(items[0].registrations) == 1 and items[0].event_id == event.event_id


def test_offers_are_counted_by_how_they_end_and_the_median_from_the_histogram(ddb):
    event = make_event(capacity=1, offer_hours=24)
    seated = register(event.event_id, "ann").data
    offered = register(event.event_id, "bo").data
    register(event.event_id, "cy")
    cancel("ann", seated["registration_id"])  # the seat is offered to bo
    later = datetime.now(UTC) + timedelta(minutes=40)
    offer_services.offer_accept(user_id="bo", registration_id=offered["registration_id"], idempotency_key=new_key(),
                                fingerprint="accept", now=later)
    report = event_report(event_id=event.event_id)
    assert (report.offers_made, report.offers_accepted, report.offers_declined, report.offers_expired) == (1, 1, 0, 0)
    assert report.median_accept_minutes == (30, 60)  # 40 minutes is in the bucket (30, 60]
    assert_invariants_clean()


def test_an_expired_and_a_declined_offer_are_counted(ddb):
    event = make_event(capacity=1, offer_hours=24)
    seated = register(event.event_id, "ann").data
    bo = register(event.event_id, "bo").data
    cy = register(event.event_id, "cy").data
    cancel("ann", seated["registration_id"])  # offered to bo
    assert offer_services.offers_sweep(now=datetime.now(UTC) + timedelta(hours=25)) == 1  # bo's ends: cy's turn
    offer_services.offer_decline(user_id="cy", registration_id=cy["registration_id"], idempotency_key=new_key(),
                                 fingerprint="decline")
    report = event_report(event_id=event.event_id)
    assert (report.offers_made, report.offers_declined, report.offers_expired, report.offers_open) == (2, 1, 1, 0)
    assert report.registered == 0 and bo["status"] == "waitlisted"
    assert_invariants_clean()


def test_the_recount_finds_a_counter_that_is_off(ddb):
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    [item] = report_items()
    item.update(actions=[EventReportDay.registrations.add(1)])
    problems = broken_invariants()
    assert any("report counts 2 registrations, the table holds 1" in p for p in problems[REPORT_CHECK]), problems


def test_the_report_reads_without_a_scan(ddb, dynamodb_calls):
    event = make_event(capacity=2)
    register(event.event_id, "ann")
    dynamodb_calls.clear()
    event_report(event_id=event.event_id)
    # One Query per slot, and a slot is a seat shard: this event has one.
    assert "Scan" not in dynamodb_calls and dynamodb_calls.count("Query") == int(event.seat_shards) == 1


def test_each_seat_shard_counts_on_its_own_report_item():
    """Registrations on different shards never meet on a report item (they would queue on it as on one shard)."""
    keys = {EventReportDay.key_for("e", shard=shard, when=utcnow()) for shard in range(shards.MAX_SHARDS)}
    assert len(keys) == shards.MAX_SHARDS


@pytest.mark.parametrize(("minutes", "bucket"), [(0, 0), (15, 0), (15.01, 1), (40, 2), (1440, 9), (20160, 14),
                                                 (99999, 14)])
def test_accept_buckets(minutes, bucket):
    assert accept_bucket(minutes) == bucket and accept_attribute(bucket).startswith("accepted_within_")


def test_median_of_the_histogram():
    counts = [0] * len(ACCEPT_BUCKET_MINUTES)
    assert median_bucket(counts) is None
    counts[0], counts[3] = 2, 3  # five accepts: the third is in bucket 3, (60, 120]
    assert median_bucket(counts) == (60, 120)
    counts[0] = 3  # six: the lower middle (third) is in bucket 0
    assert median_bucket(counts) == (0, 15)


# --- the page and the CSV --------------------------------------------------------------------------------------

def test_report_page_and_csv_show_the_same_figures(ddb, staff_client):
    event = make_event(capacity=1)
    register(event.event_id, "ann")
    register(event.event_id, "bo")
    page = staff_client.get(f"/events/{event.event_id}/report/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "<svg" in html and 'class="chart-bar"' in html and "http" not in html.split("<svg", 1)[1].split("</svg>")[0]
    exported = staff_client.get(f"/events/{event.event_id}/report.csv")
    assert exported["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(exported.content.decode())))
    assert rows[0] == ["figure", "day", "value"]
    report = event_report(event_id=event.event_id)
    for label, value in output.figures(report):
        assert [label, "", value] in rows
        assert label.split(" (")[0] in html
    assert ["Registrations made that day, still standing", datetime.now(UTC).date().isoformat(), "2"] in rows


def test_report_is_for_staff_and_unknown_events_are_404(ddb, staff_client, student_client):
    event = make_event(capacity=1)
    assert student_client.get(f"/events/{event.event_id}/report/").status_code == 403
    assert student_client.get(f"/events/{event.event_id}/report.csv").status_code == 403
    assert staff_client.get("/events/no-such-event/report/").status_code == 404
    assert staff_client.get("/events/no-such-event/report.csv").status_code == 404
    empty = staff_client.get(f"/events/{event.event_id}/report/").content.decode()
    assert "Nobody has registered yet." in empty
