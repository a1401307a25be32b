"""``registration_standing``: what a student is told of a registration, the one decision every surface asks."""

from datetime import UTC, datetime, timedelta

import pytest

from registrations.events.models import Event
from registrations.statuses import registration_standing, waiting_next, waiting_rule

STARTS = datetime(2027, 5, 1, 17, 30, tzinfo=UTC)


def event(**fields) -> Event:
    return Event(event_id="e1", title="Robot night", starts_at=STARTS, capacity=1, **fields)


@pytest.mark.parametrize("status", ["confirmed", "waitlisted", "offered"])
def test_an_event_called_off_outranks_every_live_status(status):
    standing = registration_standing(status=status, event=event(cancelled_at=STARTS - timedelta(days=1)),
                                     position=2, offer_ends=STARTS)
    assert standing.kind == "event_cancelled" and standing.label == "Event cancelled"
    assert not standing.shows_ticket and not standing.can_cancel and not standing.offers_calendar
    assert standing.calendar_status == "CANCELLED" and "Confirmed" not in standing.detail


def test_the_students_own_cancellation_and_a_gone_event():
    assert registration_standing(status="cancelled", event=event()).calendar_status == "CANCELLED"
    assert registration_standing(status="confirmed", event=None).kind == "event_cancelled"


def test_a_seat_shows_its_ticket_until_it_is_used():
    seat = registration_standing(status="confirmed", event=event())
    assert (seat.kind, seat.label, seat.shows_ticket, seat.calendar_status) == ("confirmed", "Confirmed", True,
                                                                                "CONFIRMED")
    used = registration_standing(status="confirmed", event=event(), checked_in=True)
    assert used.kind == "checked_in" and not used.shows_ticket and used.calendar_status == "CONFIRMED"


def test_a_place_in_line_is_tentative_and_says_how_a_seat_comes_in_each_mode():
    plain = registration_standing(status="waitlisted", event=event(), position=2)
    assert plain.label == "Waiting list #2" and plain.calendar_status == "TENTATIVE" and plain.can_cancel
    assert "You need do nothing now" in plain.detail
    offers = registration_standing(status="waitlisted", event=event(offer_hours=24), position=2)
    assert "24 hours to accept" in offers.detail and "need do nothing" not in offers.detail
    assert "24 hours to accept" in waiting_rule(event(offer_hours=24)) and "at once" in waiting_rule(event())
    assert "watch your inbox" in waiting_next(event(offer_hours=1)) and "1 hour to accept" in waiting_rule(
        event(offer_hours=1))


def test_an_offer_names_its_end_with_date_time_zone_and_time_left():
    ends = datetime(2027, 4, 25, 21, 22, tzinfo=UTC)
    standing = registration_standing(status="offered", event=event(offer_hours=24), offer_ends=ends,
                                     now=ends - timedelta(hours=5))
    assert "Sun 25 Apr 2027, 22:22 BST" in standing.detail and "5\xa0hours left" in standing.detail
    assert standing.calendar_status == "TENTATIVE" and not standing.offers_calendar and not standing.can_cancel
