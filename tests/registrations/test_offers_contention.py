"""A wave of cancellations on a full event in offer mode, through the capacity model (AWS's per-partition limits
and transaction conflicts, scaled as in test_contention.py): every freed seat is offered exactly once, to the
waiting list's head in ticket order, and no partition goes over its limit."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from registrations import selectors, services
from registrations.models import OFFERED, WAITLISTED
from registrations.seating.hints import hints
from tems.outbox import OutboxMessage
from tests.capacity import Models, app_through
from tests.helpers import assert_invariants_clean
from tests.race import race
from tests.registrations.helpers import make_event, register

pytestmark = pytest.mark.dynamodb_local

# The scale of test_contention.py (its comments say why): AWS's limits / 20, transactions held 5 ms x 20.
SCALE = 20
HOLD_MS = 5.0
WINDOW_SECONDS = 1.0
TAPS = 3  # a cancel answered 'busy' taps again after its Retry-After, up to this many taps in all


@pytest.fixture
def models(dynamodb_local_endpoint):
    started = Models(dynamodb_local_endpoint)
    yield started
    started.stop_all()


def cancelling(user_id: str, registration_id: str):
    def person() -> str:
        for _ in range(TAPS):
            try:
                services.registration_cancel(user_id=user_id, registration_id=registration_id)
                return "cancelled"
            except services.RegistrationError as error:
                if error.code != "busy":
                    raise
                time.sleep(float(error.extra.get("retry_after") or 1))
        return "busy"
    return person


def cancellation_wave(ddb, models, settings) -> tuple[int, list[str], dict]:
    """12 of a full 24-seat event's (4 shards) 24 seated cancel at once while 16 wait: (cancelled, the line in
    ticket order before the wave, the model's report)."""
    settings.SEATS_PER_SHARD = 6
    event = make_event(capacity=24, offer_hours=24)
    hints.remember_shards(event.event_id, 4)
    seated = {f"s{n:02d}": register(event.event_id, f"s{n:02d}").data["registration_id"] for n in range(24)}
    waiting = [f"w{n:02d}" for n in range(16)]
    for user in waiting:
        assert register(event.event_id, user).data["status"] == WAITLISTED
    in_line = [entry.user_id for entry in selectors.waitlist_entries(event_id=event.event_id)]  # ticket order
    assert sorted(in_line) == waiting
    leaving = sorted(seated)[:12]
    with app_through(models.start(scale=SCALE, hold_ms=HOLD_MS, window_seconds=WINDOW_SECONDS), ddb) as model:
        answers = race([cancelling(user, seated[user]) for user in leaving])
        report = model.report()
    return answers.count("cancelled"), in_line, report


def offered_to() -> Counter:
    return Counter(message.data["user"] for message in OutboxMessage.scan() if message.message_type == "SeatOffered")


def test_a_wave_of_cancellations_offers_each_freed_seat_once_in_order(ddb, models, settings):
    cancelled, in_line, report = cancellation_wave(ddb, models, settings)
    assert cancelled >= 1
    offers = offered_to()
    # Every freed seat offered exactly once, to the first in line: the offered are the queue's head.
    assert sum(offers.values()) == cancelled and set(offers.values()) == {1}
    assert sorted(offers) == sorted(in_line[:cancelled])
    assert all(selectors.registration_list(user_id=user)[0]["status"] == OFFERED for user in offers)
    over = [row["scope"] for row in report["partitions"] if row["utilisation"] > 1.0]
    assert over == [], f"partitions over their limit: {over}"
    print(f"{cancelled} cancellations, {report['throttles']} throttles, {report['conflicts']} conflicts, "
          f"hottest partition at {report['partitions'][0]['utilisation']:.0%} of its limit")
    assert_invariants_clean()

