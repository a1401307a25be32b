"""Metering counts what a code path really sends to DynamoDB, across threads and nested meters."""

import contextvars
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from registrations import selectors, services
from tems.metering import metered


def test_meter_counts_requests_and_capacity(ddb):
    with metered() as meter:
        event = services.event_create(title="Gig", starts_at=datetime(2027, 1, 1, tzinfo=UTC), capacity=5,
                                      created_by="s")
        selectors.event_get(event_id=event.event_id)
    # A creation is a transaction (its token makes the SDK's retry after a lost answer safe); a read of the event
    # also sums its seat shards (one BatchGetItem).
    assert dict(meter.requests) == {"TransactWriteItems": 1, "GetItem": 1, "BatchGetItem": 1}
    assert meter.write_capacity >= 1 and meter.read_capacity >= 1


def test_nested_meters_both_count_and_threads_inherit(ddb):
    event = services.event_create(title="Gig", starts_at=datetime(2027, 1, 1, tzinfo=UTC), capacity=5,
                                  created_by="s")
    with metered() as outer:
        with metered() as inner:
            selectors.event_get(event_id=event.event_id)
        with ThreadPoolExecutor(3) as pool:
            for _ in range(3):
                pool.submit(contextvars.copy_context().run, selectors.event_get, event_id=event.event_id).result()
    assert inner.total_requests == 2  # the event and its seat shards
    assert outer.total_requests == 8


def test_nothing_is_counted_outside_a_meter(ddb):
    with metered() as meter:
        pass
    services.event_create(title="Gig", starts_at=datetime(2027, 1, 1, tzinfo=UTC), capacity=5, created_by="s")
    assert meter.total_requests == 0
