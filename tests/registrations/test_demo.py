"""The demo's term (``seed_demo``): what a newcomer running ``make run`` sees is TEMS in use."""

import pytest

from registrations import demo, selectors
from registrations.models import OFFERED, WAITLISTED
from tems import demo as accounts_demo


@pytest.mark.django_db
def test_the_term_has_full_events_an_open_offer_a_cancelled_event_and_every_category(ddb):
    accounts_demo.seed_users()
    created = demo.seed_events()
    assert len(created) == 61
    # The society's draft waits for the union's approval: created, and in no student's list.
    assert selectors.event_get(event_id="winter-hackathon").is_draft
    upcoming, _ = selectors.event_list()
    assert len(upcoming) == 60
    assert len({event.category for event in upcoming}) >= 6
    assert (upcoming[-1].starts_at - upcoming[0].starts_at).days >= 35  # several weeks
    seats = selectors.seat_counts(events=upcoming)
    assert sum(1 for event in upcoming if seats[event.event_id].joins_waitlist and not event.is_cancelled) >= 5
    assert sum(event.is_cancelled for event in upcoming) == 1
    offered = next(event for event in upcoming if event.offers_seats)
    statuses = [registration.status for registration in selectors.event_registrations(event_id=offered.event_id)]
    assert OFFERED in statuses and WAITLISTED in statuses
    assert any(event.public for event in upcoming) and any(event.online_url for event in upcoming)
    assert demo.seed_events() == []  # a second run creates nothing
