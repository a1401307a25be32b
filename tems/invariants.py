"""What must always be true of the table. Apps add checks in ``<app>/invariants.py`` with ``@invariant``.

``manage.py check_invariants`` scans the table once (strongly consistent) and runs every check on the items.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from django.utils.module_loading import autodiscover_modules

from tems.dynamo import boto3_client, current_config
from tems.outbox import STALE_AFTER, outbox_stale

Item = dict[str, Any]
Check = Callable[["TableSnapshot"], Iterable[str]]
_CHECKS: dict[str, Check] = {}


def invariant(name: str) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        _CHECKS[name] = check
        return check

    return register


@dataclass
class TableSnapshot:
    items: list[Item]

    def __post_init__(self) -> None:
        self.by_pk: dict[str, list[Item]] = defaultdict(list)
        for item in self.items:
            self.by_pk[item["PK"]].append(item)

    def partition(self, pk: str) -> list[Item]:
        return self.by_pk.get(pk, [])

    def with_sk_prefix(self, pk: str, prefix: str) -> list[Item]:
        return [item for item in self.partition(pk) if item["SK"].startswith(prefix)]

    def of_entity(self, entity: str) -> list[Item]:
        return [item for item in self.items if item.get("entity") == entity]


def scan_table() -> TableSnapshot:
    client = boto3_client()
    deserializer = TypeDeserializer()
    items: list[Item] = []
    for page in client.get_paginator("scan").paginate(TableName=current_config().table_name, ConsistentRead=True):
        items.extend({k: deserializer.deserialize(v) for k, v in raw.items()} for raw in page["Items"])
    return TableSnapshot(items)


def registered_checks() -> dict[str, Check]:
    autodiscover_modules("invariants")
    return dict(_CHECKS)


def check_all(snapshot: TableSnapshot | None = None) -> dict[str, list[str]]:
    """Every registered check's list of problems (empty lists when all is well)."""
    snapshot = snapshot or scan_table()
    return {name: list(check(snapshot)) for name, check in sorted(registered_checks().items())}


@invariant(f"outbox messages are delivered within {int(STALE_AFTER.total_seconds() // 60)} minutes")
def outbox_not_stale(snapshot: TableSnapshot) -> Iterable[str]:
    return outbox_stale(items=snapshot.of_entity("OutboxMessage"))
