"""Metering counts what a code path really sends to DynamoDB, across threads and nested meters; and the three
places where tems reaches past PynamoDB's public API still hold on the version it is pinned to."""

import contextvars
import re
import tomllib
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

from botocore.client import BaseClient

from registrations import selectors
from registrations.events import services as event_services
from registrations.events.models import Event
from registrations.seating.models import SeatShard
from tems.dynamo import TableConfig, batch_get_models, configure_models, current_config
from tems.metering import metered

ROOT = Path(__file__).resolve().parents[2]


def test_meter_counts_requests_and_capacity(ddb):
    with metered() as meter:
        event = event_services.event_create(title="Gig", starts_at=datetime(2027, 1, 1, tzinfo=UTC), capacity=5,
                                      created_by="s")
        selectors.seats_for(event=selectors.event_get(event_id=event.event_id))
    # A creation is a transaction (its token makes the SDK's retry after a lost answer safe); the event is one
    # GetItem and its seats one BatchGetItem of its shards.
    assert dict(meter.requests) == {"TransactWriteItems": 1, "GetItem": 1, "BatchGetItem": 1}
    assert meter.write_capacity >= 1 and meter.read_capacity >= 1


def test_nested_meters_both_count_and_threads_inherit(ddb):
    event = event_services.event_create(title="Gig", starts_at=datetime(2027, 1, 1, tzinfo=UTC), capacity=5,
                                  created_by="s")
    with metered() as outer:
        with metered() as inner:
            selectors.event_get(event_id=event.event_id)
        with ThreadPoolExecutor(3) as pool:
            for _ in range(3):
                pool.submit(contextvars.copy_context().run, selectors.event_get, event_id=event.event_id).result()
    assert inner.total_requests == 1  # the event
    assert outer.total_requests == 4


def test_nothing_is_counted_outside_a_meter(ddb):
    with metered() as meter:
        pass
    event_services.event_create(title="Gig", starts_at=datetime(2027, 1, 1, tzinfo=UTC), capacity=5, created_by="s")
    assert meter.total_requests == 0


# --- The seam with PynamoDB's internals -------------------------------------------------------------------------

def _minor(text: str) -> tuple[int, int]:
    major, minor = re.match(r"(\d+)\.(\d+)", text).groups()
    return int(major), int(minor)


def test_pynamodb_is_pinned_to_the_minor_it_is_tested_on():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in dependencies if d.startswith("pynamodb"))
    low, high = re.fullmatch(r"pynamodb>=([\d.]+),<([\d.]+)", spec).groups()
    assert _minor(high) == (_minor(low)[0], _minor(low)[1] + 1), spec
    locked = re.search(r"^pynamodb==([\d.]+)$", (ROOT / "requirements.lock").read_text(), re.M).group(1)
    assert _minor(locked) == _minor(low) == _minor(version("pynamodb"))


def test_batch_get_models_pages_keys_of_several_models(moto_ddb):
    # Model._batch_get_page: one BatchGetItem page, unprocessed keys handed back.
    event = event_services.event_create(title="Gig", starts_at=datetime(2027, 1, 1, tzinfo=UTC), capacity=5,
                                  created_by="s")
    wanted = [(Event, Event.key_for(event.event_id)), (SeatShard, SeatShard.key_for(event.event_id, 0)),
              (Event, Event.key_for("no-such-event"))]
    wanted += [(SeatShard, SeatShard.key_for("no-such-event", n)) for n in range(120)]  # more than one page
    with metered() as meter:
        found = batch_get_models(wanted)
    assert sorted(type(item).__name__ for item in found) == ["Event", "SeatShard"]
    assert next(item for item in found if isinstance(item, Event)).title == "Gig"
    assert meter.requests["BatchGetItem"] == 2


def test_the_client_metered_is_the_one_pynamodb_sends_through(moto_ddb):
    # Model._get_connection().connection.client: the botocore client metering hooks.
    with metered() as meter:
        Event.count(Event.pk_for("no-such-event"))
    client = Event._get_connection().connection.client
    assert isinstance(client, BaseClient) and client._tems_metered
    assert dict(meter.requests) == {"Query": 1}


def test_reconfiguring_points_each_model_at_the_new_table_through_the_client_it_had(moto_ddb):
    # PynamoDB's private seam: Model._connection (a TableConnection) and its .connection (the client holder),
    # which configure_models replaces and re-shares so a new table on the same endpoint builds no new client.
    first = Event._get_connection()
    client = first.connection.client
    configure_models(TableConfig("tems_other", None, current_config().region))
    again = Event._get_connection()
    assert again is not first and again.table_name == "tems_other" and Event.Meta.table_name == "tems_other"
    assert again.connection.client is client
    assert again.connection.get_meta_table("tems_other") is not None
