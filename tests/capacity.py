"""The capacity model (tests.support.capacity_model) in a test: started in process in front of DynamoDB Local, and the
app's models pointed at it and back. Shared by tests/support/test_capacity_model.py and the contention tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tems.dynamo import TableConfig, configure_models
from tems.metering import ready_clients
from tests.support.capacity_model import CapacityModel


class Models:
    """Capacity models started for one test, all stopped by ``stop_all`` (a fixture's teardown)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.started: list[CapacityModel] = []

    def start(self, **options) -> CapacityModel:
        # A test stages a held item from its own thread (a transaction, then a request meeting its hold), which
        # needs the answer before the hold ends; a contention test only meets more conflicts that way (a person's
        # next round can meet their own last one), which makes it stricter, not laxer. The bench answers after.
        options.setdefault("answer_after_hold", False)
        model = CapacityModel(upstream=self.upstream, **options).start()
        self.started.append(model)
        return model

    def stop_all(self) -> None:
        for model in self.started:
            model.stop()
        self.started.clear()


def through(model: CapacityModel, config: TableConfig) -> TableConfig:
    """``config``'s table, reached through ``model``."""
    return TableConfig(config.table_name, model.endpoint, config.region)


@contextmanager
def app_through(model: CapacityModel, config: TableConfig) -> Iterator[CapacityModel]:
    """Every model of the app talks to ``config``'s table through ``model`` inside, and directly again after.

    Clients are built before the block (``ready_clients``): threads fanned out inside must meet the database,
    not each build its own botocore client."""
    configure_models(through(model, config))
    ready_clients()
    try:
        yield model
    finally:
        configure_models(config)
        ready_clients()
