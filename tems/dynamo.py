"""Shared DynamoDB infrastructure: the single table's schema and model configuration (metering: ``tems.metering``).

Every PynamoDB model of TEMS declares ``class Meta(TableMeta)`` and so lives in the one table named by
``DYNAMODB_TABLE``. Nothing here contacts DynamoDB at import time: tables are created by
``manage.py ensure_table`` (or a test fixture) and clients are made on first use.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import boto3
from django.conf import settings
from pynamodb.attributes import UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.exceptions import TableError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

# DynamoDB Local accepts any credentials but insists on having some.
LOCAL_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}

# A burst of concurrent taps must not queue behind botocore's default pool of 10 connections.
MAX_POOL_CONNECTIONS = 64

TTL_ATTRIBUTE = "expires_at"
GSI1 = "GSI1"

# The schema is declared once, here; ensure_table creates what is missing from it.
TABLE_SCHEMA: dict[str, Any] = {
    "AttributeDefinitions": [
        {"AttributeName": "PK", "AttributeType": "S"},
        {"AttributeName": "SK", "AttributeType": "S"},
        {"AttributeName": "GSI1PK", "AttributeType": "S"},
        {"AttributeName": "GSI1SK", "AttributeType": "S"},
    ],
    "KeySchema": [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ],
    "GlobalSecondaryIndexes": [
        {
            # Overloaded index for collection listings: events by start time, inventory by sku, ...
            "IndexName": GSI1,
            "KeySchema": [
                {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        }
    ],
    "BillingMode": "PAY_PER_REQUEST",
}


class TableMeta:
    """Base ``Meta`` for every model in the single table; ``configure_models`` re-points them all."""

    table_name = settings.DYNAMODB_TABLE
    host = settings.DYNAMODB_ENDPOINT_URL
    region = settings.AWS_REGION
    max_pool_connections = MAX_POOL_CONNECTIONS
    if settings.DYNAMODB_ENDPOINT_URL:
        aws_access_key_id = LOCAL_CREDENTIALS["aws_access_key_id"]
        aws_secret_access_key = LOCAL_CREDENTIALS["aws_secret_access_key"]


class TableModel(Model):
    """Base of every model in the single table: its Meta, the ``PK``/``SK`` keys and the ``entity`` marker.

    ``entity`` (the class name) is written on each item the model saves, so a scan can tell the items apart.
    A model that is another model's view of the same item (``EventSeats`` over ``Event``) sets ``ENTITY = None``
    and writes none. A model whose sort key is fixed redeclares ``sk`` with its default.
    """

    class Meta(TableMeta):
        pass

    # "" means "the class's name"; None means "no entity attribute" (a view of another model's item).
    ENTITY: ClassVar[str | None] = ""

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Runs inside type.__new__, before PynamoDB's metaclass collects the attributes, so the attribute added
        # here is declared exactly as if written in the class body. Each model gets its own, with its default.
        super().__init_subclass__(**kwargs)
        if cls.ENTITY is not None and "entity" not in vars(cls):
            cls.entity = UnicodeAttribute(default=cls.ENTITY or cls.__name__, attr_name="entity")


class CollectionIndex(GlobalSecondaryIndex):
    """GSI1: PynamoDB copies the index onto each model that declares it, so one definition serves all."""

    class Meta:
        index_name = GSI1
        projection = AllProjection()

    gsi1pk = UnicodeAttribute(hash_key=True, attr_name="GSI1PK")
    gsi1sk = UnicodeAttribute(range_key=True, attr_name="GSI1SK")


def table_models() -> list[type[Model]]:
    """Every model class that lives in the single table."""
    found: list[type[Model]] = []
    stack = list(Model.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        meta = getattr(cls, "Meta", None)
        if cls is not TableModel and isinstance(meta, type) and issubclass(meta, TableMeta):
            found.append(cls)
    return found


def batch_get_models(wanted: Iterable[tuple[type[Model], tuple[str, str]]], *,
                     consistent_read: bool = True) -> list[Model]:
    """Items of several models of the single table, each key with its model, in as few BatchGetItems as
    PynamoDB's ``batch_get`` would need for them all (100 keys a page; unprocessed keys asked again). Missing
    items are left out."""
    by_key = {(pk, sk): model for model, (pk, sk) in wanted}
    found: list[Model] = []
    keys = [{"PK": {"S": pk}, "SK": {"S": sk}} for pk, sk in sorted(by_key)]
    sender = next(iter(by_key.values()), None)
    while keys:
        page, keys = keys[:100], keys[100:]
        while page:
            # Any of the models sends it: they share the table, and each carries the connection (and metering)
            # configure_models gave it.
            items, unprocessed = sender._batch_get_page(page, consistent_read=consistent_read,
                                                        attributes_to_get=None)
            for raw in items or ():
                found.append(by_key[(raw["PK"]["S"], raw["SK"]["S"])].from_raw_data(raw))
            page = unprocessed or []
    return found


@dataclass(frozen=True)
class TableConfig:
    table_name: str
    host: str | None
    region: str

    @classmethod
    def from_settings(cls) -> TableConfig:
        return cls(settings.DYNAMODB_TABLE, settings.DYNAMODB_ENDPOINT_URL, settings.AWS_REGION)

    @property
    def credentials(self) -> dict[str, str]:
        return dict(LOCAL_CREDENTIALS) if self.host else {}


_config_lock = threading.Lock()
_current: dict[str, Any] = {"config": None, "connection": None, "clients_ready": False}
# Connections kept across configurations, by what their botocore clients are built from: a client is tied to an
# endpoint, a region and credentials, not to a table, and building one costs a botocore session and a parsed
# service model, for each of the ~17 models every time the table changes. Without an endpoint (AWS itself, or
# moto in a test) botocore takes the credentials from the environment, so those are part of the key. A few
# endpoints are kept, the latest used: a tool that starts a throwaway endpoint per run must not pile up clients.
_ENDPOINTS_KEPT = 4
_TRANSACTIONS = "transactions"  # the transaction connection's key among an endpoint's, beside the model classes
_endpoint_connections: OrderedDict[tuple[Any, ...], dict[Any, Connection]] = OrderedDict()


def current_config() -> TableConfig:
    return _current["config"] or TableConfig.from_settings()


_ENVIRONMENT_CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")


def _endpoint_key(config: TableConfig) -> tuple[Any, ...]:
    if config.host:
        return config.host, config.region, tuple(sorted(config.credentials.items()))
    return None, config.region, tuple(os.environ.get(name) for name in _ENVIRONMENT_CREDENTIALS)


def _kept_connections(endpoint: tuple[Any, ...]) -> dict[Any, Connection]:
    kept = _endpoint_connections.pop(endpoint, None) or {}
    _endpoint_connections[endpoint] = kept
    while len(_endpoint_connections) > _ENDPOINTS_KEPT:
        _endpoint_connections.popitem(last=False)
    return kept


def _reuse_endpoint_connection(model: type[Model], connections: dict[Any, Connection]) -> None:
    table = model._get_connection()  # built from the model's Meta: no client yet, no request
    kept = connections.setdefault(model, table.connection)
    if kept is not table.connection:
        # The connection knows each table's key schema by name; a table met before is known already.
        try:
            kept.get_meta_table(table.table_name)
        except TableError:
            kept.add_meta_table(table.get_meta_table())
        table.connection = kept


def configure_models(config: TableConfig) -> None:
    """Point every table model (and the transaction connection) at ``config``; used by tests and tools.

    Configuring the configuration already in force changes nothing; models keep their clients for an endpoint
    they have talked to before, whichever table they now name.
    """
    settings_ = {
        "table_name": config.table_name,
        "host": config.host,
        "region": config.region,
        "aws_access_key_id": config.credentials.get("aws_access_key_id"),
        "aws_secret_access_key": config.credentials.get("aws_secret_access_key"),
    }
    with _config_lock:
        if config == _current["config"]:
            return
        # TableMeta too, so a model class imported only later inherits the same configuration.
        for meta in (TableMeta, *(model.Meta for model in table_models())):
            for name, value in settings_.items():
                setattr(meta, name, value)
        connections = _kept_connections(_endpoint_key(config))
        for model in table_models():
            model._connection = None
            _reuse_endpoint_connection(model, connections)
        _current["config"] = config
        _current["connection"] = connections.get(_TRANSACTIONS)
        _current["clients_ready"] = False


def transaction_connection() -> Connection:
    """The PynamoDB connection that ``TransactWrite``/``TransactGet`` send through (one per process)."""
    conn = _current["connection"]
    if conn is None:
        with _config_lock:
            conn = _current["connection"]
            if conn is None:
                config = current_config()
                conn = Connection(
                    region=config.region,
                    host=config.host,
                    max_pool_connections=MAX_POOL_CONNECTIONS,
                    **config.credentials,
                )
                _current["connection"] = conn
                endpoint = _endpoint_key(config)
                if endpoint in _endpoint_connections:
                    _endpoint_connections[endpoint][_TRANSACTIONS] = conn
    return conn


def boto3_client():
    """A plain boto3 DynamoDB client for table management and scans."""
    config = current_config()
    return boto3.client("dynamodb", region_name=config.region, endpoint_url=config.host, **config.credentials)


def ensure_table(*, client=None, table_name: str | None = None) -> list[str]:
    """Create the table, its indexes and its TTL setting if missing; change nothing else.

    Returns a sentence for each thing it did (empty when everything was already there). Safe against real AWS.
    """
    client = client or boto3_client()
    table_name = table_name or current_config().table_name
    done: list[str] = []
    try:
        description = client.describe_table(TableName=table_name)["Table"]
    except client.exceptions.ResourceNotFoundException:
        client.create_table(TableName=table_name, **TABLE_SCHEMA)
        client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
        done.append(f"created table {table_name}")
        description = client.describe_table(TableName=table_name)["Table"]

    existing = {index["IndexName"] for index in description.get("GlobalSecondaryIndexes", [])}
    for index in TABLE_SCHEMA["GlobalSecondaryIndexes"]:
        if index["IndexName"] in existing:
            continue
        names = {key["AttributeName"] for key in index["KeySchema"]}
        client.update_table(
            TableName=table_name,
            AttributeDefinitions=[a for a in TABLE_SCHEMA["AttributeDefinitions"] if a["AttributeName"] in names],
            GlobalSecondaryIndexUpdates=[{"Create": index}],
        )
        done.append(f"created index {index['IndexName']}")

    ttl = client.describe_time_to_live(TableName=table_name)["TimeToLiveDescription"]
    if ttl.get("TimeToLiveStatus") not in {"ENABLED", "ENABLING"}:
        client.update_time_to_live(
            TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
        )
        done.append(f"enabled TTL on {TTL_ATTRIBUTE}")
    return done


def clients_ready() -> bool:
    """Whether ``tems.metering.ready_clients`` already hooked this configuration's clients."""
    return bool(_current["clients_ready"])


def mark_clients_ready() -> None:
    _current["clients_ready"] = True

