"""A DynamoDB capacity model for local runs: an HTTP proxy in front of DynamoDB Local that throttles and conflicts.

DynamoDB Local applies every write one at a time and never answers ``ProvisionedThroughputExceededException`` or
``TransactionConflict``; AWS does both. This proxy sits between the app and DynamoDB Local, forwards every request
unchanged and, before forwarding, refuses what AWS would refuse, with the error bodies AWS sends. The app's
clients are pointed at it through ``DYNAMODB_ENDPOINT_URL`` and do not know it is there, so botocore's own retry
logic meets the throttle exactly as it would on AWS, and the app's retry paths meet the conflicts.

Run it alone::

    python -m tests.support.capacity_model --upstream http://127.0.0.1:8765 --port 8766 [--scale 1] [--hold-ms 10]
        [--partition-wcu 1000] [--partition-rcu 3000] [--table-wcu 4000] [--table-rcu 12000]

or in-process (a benchmark)::

    with DynamoDBLocal() as ddb, CapacityModel(upstream=ddb.endpoint, scale=50) as model:
        ...  # point the app at model.endpoint
        print(format_report(model.report()))

``GET /__capacity_model__/report`` answers the report as JSON, ``POST /__capacity_model__/reset`` clears it.

The rules, and what the model assumes where AWS does not say (docs/capacity-model.md has the why):

- **Units** (AWS's documented rules). Writes: 1 WCU per started KB of the larger of the old and new item,
  transactional 2x. Every GSI entry written counts on the *index's* partition: an entry put or deleted is one
  write of the projected item's size; an update that moves the index key is a delete plus a put. Reads: 1 RCU per
  started 4 KB strongly consistent, 0.5 eventually consistent, 2 transactional. An item's size is the sum of its
  attribute names and values (strings as UTF-8, numbers ~1 byte per 2 digits + 1, containers 3 bytes + 1 per
  element) - AWS's approximation. The images a charge needs come from upstream: a put or delete asks for
  ``ReturnValues=ALL_OLD``, an update reads the item first (a consistent GetItem of the model's own) and asks for
  ``ALL_NEW``, a transaction reads its items first (BatchGetItem) and its updated items after; GetItem/Query/Scan
  ask for ``ReturnConsumedCapacity``, because only the engine knows what a Query read before its filter.
  Whatever the client did not ask for is removed from the answer again, so it gets exactly what it asked for.
  ConditionCheck in a transaction is 2 WCU, as DynamoDB Local itself reports it.
- **Limits.** Each partition key value (an item collection, of the table or of a GSI) may take 1,000 WCU and 3,000 RCU
  in any 1 s window (S seconds on the machine, see the time scale); the table (and each GSI) as a whole takes a
  configurable ceiling (default 4,000 WCU / 12,000 RCU, where an on-demand table starts). The model does **not** split
  a hot partition "for heat" as AWS eventually does for distinct sort keys, so it is conservative. No burst above the
  limit: a request is admitted only if its units fit in the last second's window (a single request larger than the
  whole window is admitted into an empty one, or it could never pass). Units that are only known from the answer (an
  update's new image, a read) are admitted on an estimate and the window corrected afterwards, so it can run over, as
  AWS's own accounting does; the next requests then wait.
- **Throttle answers** (as AWS sends them): a single-item request, Query, Scan -> HTTP 400
  ``ProvisionedThroughputExceededException`` with ``ThrottlingReasons`` (botocore retries it with backoff);
  TransactWriteItems/TransactGetItems -> ``TransactionCanceledException`` with ``ThrottlingError`` on the refused
  items (botocore does not retry it); BatchWriteItem/BatchGetItem -> the refused items in
  ``UnprocessedItems``/``UnprocessedKeys``, and ``ProvisionedThroughputExceededException`` if all were refused.
  A refused request consumes nothing.
- **Transaction conflicts** (AWS's three documented cases): an accepted TransactWriteItems holds each of its items
  while it is in flight and for ``hold_ms`` from the moment it was forwarded (default 10 ms: AWS does not publish
  how long a transaction holds its items; 10 ms is the order of a transaction's latency), and answers when the
  hold ends, committed or cancelled: its latency is the hold, so a client's next request never meets its own
  previous transaction (``answer_after_hold=False``, ``--answer-early``: the answer as soon as DynamoDB Local
  gives it, for a test that stages a held item from its own thread). A TransactWriteItems
  touching a held item -> ``TransactionCanceledException`` with ``TransactionConflict`` on that item; a
  PutItem/UpdateItem/DeleteItem -> ``TransactionConflictException``; a TransactGetItems touching an item that a
  transaction holds or a single write is writing -> ``TransactionCanceledException``. A BatchWriteItem item on a
  held key comes back in ``UnprocessedItems`` (an assumption: AWS does not document this case).
- **Time scale** ``scale`` = S: the machine offers 1/S of the load it stands for, so every duration is multiplied
  by S: the hold time, and the limits' window, AWS's second, which lasts S seconds here and takes AWS's units
  (1,000 WCU per partition), so a partition takes 1,000/S per machine second on average. Reports give both the
  machine's units per machine second and the equivalent at scale (units per real second) against AWS's limits,
  and always print S. Choose S so that the scaled hold exceeds the time DynamoDB Local takes over a transaction
  (``transaction_in_flight_ms`` in the report; items are held at least that long).
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import re
import signal
import sys
import threading
import time
import zlib
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from tems.local_dynamodb import free_port
from tests.support.item_size import item_size

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
WINDOW_SECONDS = 1.0  # AWS states partition limits per second; the model checks every sliding 1 s window.
REPORT_PATH = "/__capacity_model__/report"
RESET_PATH = "/__capacity_model__/reset"

_TARGET_PREFIX = "DynamoDB_20120810."
_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
_JSON = "application/x-amz-json-1.0"
_THROTTLE_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table "
    "or index so please try again shortly. If exceptions persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
_CONFLICT_MESSAGE = "Transaction is ongoing for the item"
WRITE, READ = "write", "read"


# --- sizes and units ---------------------------------------------------------------------------------------

def write_units(size: int, *, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / WRITE_UNIT_BYTES))
    return float(units * (2 if transactional else 1))


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    blocks = max(1, math.ceil(size / READ_UNIT_BYTES))
    if transactional:
        return float(2 * blocks)
    return float(blocks) if consistent else blocks / 2


# --- table schemas -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class IndexSchema:
    name: str
    hash_key: str
    range_key: str | None
    projection: str  # ALL, KEYS_ONLY or INCLUDE
    included: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Schema:
    table: str
    hash_key: str
    range_key: str | None
    indexes: tuple[IndexSchema, ...]

    def key_of(self, item: dict[str, Any]) -> dict[str, Any]:
        names = (self.hash_key, self.range_key) if self.range_key else (self.hash_key,)
        return {name: item[name] for name in names if name in item}

    def index(self, name: str | None) -> IndexSchema | None:
        return next((index for index in self.indexes if index.name == name), None)


def _keys(key_schema: list[dict[str, str]]) -> tuple[str, str | None]:
    hash_key = next(k["AttributeName"] for k in key_schema if k["KeyType"] == "HASH")
    range_key = next((k["AttributeName"] for k in key_schema if k["KeyType"] == "RANGE"), None)
    return hash_key, range_key


def _schema_from(description: dict[str, Any]) -> Schema:
    hash_key, range_key = _keys(description["KeySchema"])
    indexes = []
    for index in description.get("GlobalSecondaryIndexes") or []:
        index_hash, index_range = _keys(index["KeySchema"])
        projection = index.get("Projection") or {}
        indexes.append(IndexSchema(index["IndexName"], index_hash, index_range, projection.get("ProjectionType", "ALL"),
                                   frozenset(projection.get("NonKeyAttributes") or ())))
    return Schema(description["TableName"], hash_key, range_key, tuple(indexes))


def _scalar(value: dict[str, Any]) -> str:
    return str(next(iter(value.values())))


def _partition(table: str, index: str | None, attribute: str, value: dict[str, Any]) -> str:
    resource = f"{table}/{index}" if index else table
    return f"{resource}|{attribute}={_scalar(value)}"


def _resource_of(partition: str) -> str:
    return partition.split("|", 1)[0]


def _item_id(table: str, key: dict[str, Any]) -> tuple[str, str]:
    return table, json.dumps(key, sort_keys=True)


def _item_kind(item: tuple[str, str]) -> str:
    """What sort of item ``item`` is, for the report: its sort key (or, without one, its partition key) up to the
    first ``#`` ("SEATS", "REGCLAIM", "METADATA")."""
    values = [next(iter(value.values()), "") for _, value in sorted(json.loads(item[1]).items())]
    named = [str(value) for value in values if isinstance(value, str)]
    # Keys sort PK before SK: the last named value is the sort key when there is one.
    return named[-1].split("#", 1)[0] if named else "?"


@dataclass(frozen=True)
class Charge:
    partition: str  # "<table>[/<index>]|<attr>=<value>", or a resource alone for a table-wide Scan
    kind: str  # WRITE or READ
    units: float


def _index_entry(schema: Schema, index: IndexSchema, image: dict[str, Any] | None) -> dict[str, Any] | None:
    """The index's entry for an item image (its projected attributes), or None if the item is not in the index."""
    if not image or index.hash_key not in image or (index.range_key and index.range_key not in image):
        return None
    if index.projection == "ALL":
        return image
    names = {schema.hash_key, schema.range_key, index.hash_key, index.range_key} | set(index.included)
    return {name: value for name, value in image.items() if name in names}


def write_charges(schema: Schema, key: dict[str, Any], old: dict[str, Any] | None, new: dict[str, Any] | None, *,
                  transactional: bool = False) -> list[Charge]:
    """What one item write costs and where: the table's partition and every index entry it puts or deletes."""
    charges = [Charge(_partition(schema.table, None, schema.hash_key, key[schema.hash_key]), WRITE,
                      write_units(max(item_size(old), item_size(new)), transactional=transactional))]
    for index in schema.indexes:
        before, after = _index_entry(schema, index, old), _index_entry(schema, index, new)
        if before is None and after is None or before == after:
            continue  # AWS writes an index only when an entry appears, goes or changes
        moved = before is not None and after is not None and any(
            before.get(name) != after.get(name) for name in (index.hash_key, index.range_key) if name)
        if before is not None and (after is None or moved):
            charges.append(Charge(_partition(schema.table, index.name, index.hash_key, before[index.hash_key]), WRITE,
                                  write_units(item_size(before), transactional=transactional)))
        if after is not None:
            charges.append(Charge(_partition(schema.table, index.name, index.hash_key, after[index.hash_key]), WRITE,
                                  write_units(item_size(after), transactional=transactional)))
    return charges


# --- sliding windows -------------------------------------------------------------------------------------------

class _Entry:
    __slots__ = ("at", "live", "units")

    def __init__(self, at: float, units: float) -> None:
        self.at, self.units, self.live = at, units, True


@dataclass
class _Window:
    """Units taken in the last ``seconds``, for one partition or table and one kind (read or write)."""

    limit: float
    seconds: float = 1.0  # the window's length on the machine: AWS's second, times the scale
    entries: deque[_Entry] = field(default_factory=deque)
    total: float = 0.0
    peak: float = 0.0
    consumed: float = 0.0
    throttles: int = 0

    def _prune(self, now: float) -> None:
        while self.entries and self.entries[0].at <= now - self.seconds:
            entry = self.entries.popleft()
            entry.live = False
            self.total -= entry.units

    def fits(self, now: float, units: float) -> bool:
        self._prune(now)
        # A request larger than the whole window is let into an empty one, or it could never pass.
        return self.total + units <= self.limit + 1e-9 or self.total <= 1e-9

    def take(self, now: float, units: float) -> _Entry:
        self._prune(now)
        entry = _Entry(now, units)
        self.entries.append(entry)
        self._add(units)
        return entry

    def adjust(self, entry: _Entry, units: float) -> None:
        """Replace an admitted estimate by what the request really took, in the window it was admitted to."""
        delta = units - entry.units
        entry.units = units
        if entry.live:
            self._add(delta)
        else:
            self.consumed += delta

    def _add(self, units: float) -> None:
        self.total += units
        self.consumed += units
        self.peak = max(self.peak, self.total)


# --- the model -------------------------------------------------------------------------------------------------

@dataclass
class _Admitted:
    entries: dict[tuple[str, str], _Entry]


class _Refused(Exception):
    def __init__(self, partitions: set[str]) -> None:
        super().__init__(", ".join(sorted(partitions)))
        self.partitions = partitions


class CapacityModel:
    """The proxy and its state. ``start()``/``stop()`` or a context manager; ``endpoint`` is where to point clients.

    ``scale`` S > 1 multiplies every duration by S, the hold time and the limits' 1 s window, so a partition takes
    1,000/S WCU per machine second (the machine offers 1/S of the load it stands for). Limits are AWS's per
    second; ``hold_ms`` is the time a transaction holds its items. The limits are options, for a test to reach
    one in a moment without stretching the window.
    """

    def __init__(self, *, upstream: str, scale: float = 1.0, hold_ms: float = 10.0, partition_wcu: float = 1000,
                 partition_rcu: float = 3000, table_wcu: float = 4000, table_rcu: float = 12000,
                 port: int | None = None, answer_after_hold: bool = True,
                 window_seconds: float | None = None) -> None:
        if scale <= 0:
            raise ValueError("scale must be positive")
        parts = urlsplit(upstream)
        self.upstream = upstream
        self._upstream_host, self._upstream_port = parts.hostname or "127.0.0.1", parts.port or 80
        self.scale = float(scale)
        self._window_seconds = window_seconds
        self.hold_ms = float(hold_ms)
        self.answer_after_hold = answer_after_hold
        self.limits = {"partition_wcu": float(partition_wcu), "partition_rcu": float(partition_rcu),
                       "table_wcu": float(table_wcu), "table_rcu": float(table_rcu)}
        self.port = port or free_port()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._schemas: dict[str, Schema] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.reset()

    # -- lifecycle --

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> CapacityModel:
        model = self

        class Handler(_Handler):
            capacity_model = model

        self._server = _Server(("127.0.0.1", self.port), Handler)
        # serve_forever looks for a shutdown every poll_interval: its default (0.5 s) is what each stop waited.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="capacity-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- state --

    @property
    def hold_seconds(self) -> float:
        """The real time a transaction holds its items: the documented assumption times the scale."""
        return self.hold_ms * self.scale / 1000

    def reset(self) -> None:
        with self._lock:
            self._windows: dict[tuple[str, str], _Window] = {}
            self._holds: dict[tuple[str, str], float] = {}
            self._transacting: Counter[tuple[str, str]] = Counter()
            # The ClientRequestToken of the transaction holding each item: botocore repeats a transaction with
            # the same token, and AWS answers that repeat as the same transaction, never as a conflict with itself.
            self._holders: dict[tuple[str, str], str] = {}
            self._next_forget = 0.0
            self._writing: Counter[tuple[str, str]] = Counter()
            self._requests: Counter[str] = Counter()
            self._throttles: Counter[str] = Counter()
            self._conflicts: Counter[str] = Counter()
            self._conflicted_kinds: Counter[str] = Counter()  # held items a refused transaction met, by kind
            self._started = time.monotonic()
            # How long DynamoDB Local took over each accepted transaction: its items are held at least that
            # long, so when this exceeds the (scaled) hold time, the machine, not the model, set the conflicts.
            self._in_flight: deque[float] = deque(maxlen=100_000)  # the latest, so a long run stays small

    def _limit(self, scope: str, kind: str) -> float:
        """What one window takes for ``scope``: AWS's units per second times the real seconds the window stands for
        (exactly AWS's units, unless a test shortened the window)."""
        name = ("partition_" if "|" in scope else "table_") + ("wcu" if kind == WRITE else "rcu")
        return self.limits[name] * self.window_seconds / self.scale

    @property
    def window_seconds(self) -> float:
        """AWS's 1 s window on the machine: a duration, so S times longer, like the hold time. A window of one
        machine second would judge 1/S of a real second: at S = 240, 4 ms, where AWS averages over a second, so
        a partition at a third of its limit was throttled whenever a few requests came close together. A test
        may pass a shorter one (``window_seconds``), stricter than AWS, to meet throttles within a second."""
        return self._window_seconds or WINDOW_SECONDS * self.scale

    def _window(self, scope: str, kind: str) -> _Window:
        window = self._windows.get((scope, kind))
        if window is None:
            window = self._windows[(scope, kind)] = _Window(self._limit(scope, kind), self.window_seconds)
        return window

    @staticmethod
    def _by_window(charges: Iterable[Charge]) -> dict[tuple[str, str], float]:
        totals: dict[tuple[str, str], float] = {}
        for charge in charges:
            scopes = (charge.partition, _resource_of(charge.partition)) if "|" in charge.partition \
                else (charge.partition,)
            for scope in scopes:
                totals[(scope, charge.kind)] = totals.get((scope, charge.kind), 0.0) + charge.units
        return totals

    def _admit(self, charges: list[Charge], now: float) -> _Admitted:
        """Take the charges if every window they touch has room; else raise _Refused and take nothing.

        Call with the lock held."""
        totals = self._by_window(charges)
        refused = {scope for (scope, kind), units in totals.items() if not self._window(scope, kind).fits(now, units)}
        if refused:
            for scope, kind in totals:
                if scope in refused:
                    self._window(scope, kind).throttles += 1
            raise _Refused(refused)
        return _Admitted({key: self._window(*key).take(now, units) for key, units in totals.items()})

    def _settle(self, admitted: _Admitted, charges: list[Charge]) -> None:
        """Correct the admitted estimate to what the request took (known only from the answer)."""
        totals = self._by_window(charges)
        now = time.monotonic()
        with self._lock:
            for key in set(totals) | set(admitted.entries):
                units = totals.get(key, 0.0)
                entry = admitted.entries.get(key)
                if entry is not None:
                    self._window(*key).adjust(entry, units)
                elif units:
                    self._window(*key).take(now, units)

    def _held(self, item: tuple[str, str], now: float, *, by_writes_too: bool = False,
              token: str | None = None) -> bool:
        if self._transacting[item] > 0 or self._holds.get(item, 0.0) > now:
            return token is None or self._holders.get(item) != token
        return by_writes_too and self._writing[item] > 0

    @staticmethod
    def _release(counter: Counter[tuple[str, str]], item: tuple[str, str]) -> None:
        counter[item] -= 1
        if counter[item] <= 0:
            del counter[item]  # a long run touches many items: keep only those in flight

    # -- the report --

    def report(self, *, top: int | None = None) -> dict[str, Any]:
        """Peak units per partition key and per table in any (real) 1 s window, against the limits; throttles,
        conflicts.

        Partitions come most loaded first; ``top`` keeps only that many (a run with an idempotency key per request
        has as many partitions as requests). ``partition_count`` is always the full number."""
        with self._lock:
            scopes: dict[str, dict[str, Any]] = {}
            for (scope, kind), window in self._windows.items():
                row = scopes.setdefault(scope, {"scope": scope})
                short = "wcu" if kind == WRITE else "rcu"
                # Per machine second (the machine's own units, averaged over the window), and per real second at
                # scale, against AWS's limits; the window is a real second (S seconds here) unless a test chose.
                row[f"peak_{short}_1s"] = round(window.peak / window.seconds, 2)
                row[f"limit_{short}_1s"] = round(window.limit / window.seconds, 4)
                row[f"peak_{short}_per_s_at_scale"] = round(window.peak / window.seconds * self.scale, 1)
                row[f"aws_limit_{short}_per_s"] = round(window.limit / window.seconds * self.scale, 4)
                row[f"{short}_consumed"] = round(window.consumed, 2)
                row[f"{kind}_throttles"] = window.throttles
            for row in scopes.values():
                row["utilisation"] = round(max(row.get("peak_wcu_1s", 0) / row.get("limit_wcu_1s", 1),
                                               row.get("peak_rcu_1s", 0) / row.get("limit_rcu_1s", 1)), 3)
            rows = sorted(scopes.values(), key=lambda row: (-row["utilisation"], row["scope"]))
            return {
                "scale": self.scale,
                "hold_ms": self.hold_ms,
                "hold_ms_real": self.hold_seconds * 1000,
                "window_seconds": self.window_seconds,
                "limits_per_s": dict(self.limits),
                "elapsed_s": round(time.monotonic() - self._started, 3),
                "requests": dict(self._requests),
                "throttles": sum(self._throttles.values()),
                "throttles_by_operation": dict(self._throttles),
                "conflicts": sum(self._conflicts.values()),
                "conflicts_by_operation": dict(self._conflicts),
                "conflicted_items_by_kind": dict(self._conflicted_kinds.most_common()),
                "transaction_in_flight_ms": _summary(self._in_flight),
                "partition_count": sum(1 for row in rows if "|" in row["scope"]),
                "partitions": [row for row in rows if "|" in row["scope"]][:top],
                "tables": [row for row in rows if "|" not in row["scope"]],
            }

    # -- upstream --

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(self._upstream_host, self._upstream_port, timeout=60)
        return conn

    def forward(self, body: bytes, headers: dict[str, str], *,
                own: bool = False) -> tuple[int, list[tuple[str, str]], bytes]:
        """Send one request to DynamoDB Local on this thread's keep-alive connection (``own``: the model's)."""
        for attempt in range(2):
            conn = self._connection()
            try:
                conn.request("POST", "/", body=body, headers={**headers, "Content-Length": str(len(body))})
                if not own:
                    self._local.sent = True
                answer = conn.getresponse()
                return answer.status, answer.getheaders(), answer.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _call(self, operation: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """A request of the model's own (DescribeTable, reading images), signed like the client's."""
        status, _, body = self.forward(json.dumps(payload).encode(),
                                       {**headers, "X-Amz-Target": _TARGET_PREFIX + operation}, own=True)
        return status, json.loads(body or b"{}")

    def schema(self, table: str, headers: dict[str, str]) -> Schema | None:
        schema = self._schemas.get(table)
        if schema is None:
            status, answer = self._call("DescribeTable", {"TableName": table}, headers)
            if status != 200:
                return None  # the real request will get DynamoDB Local's own answer (ResourceNotFound, ...)
            schema = self._schemas[table] = _schema_from(answer["Table"])
        return schema

    def _images(self, keys: list[tuple[str, dict[str, Any]]], headers: dict[str, str]) -> list[dict[str, Any] | None]:
        """The current items at ``keys`` (consistent read), in order; None where there is none."""
        if not keys:
            return []
        if len(keys) == 1:
            table, key = keys[0]
            status, answer = self._call("GetItem", {"TableName": table, "Key": key, "ConsistentRead": True}, headers)
            return [answer.get("Item") if status == 200 else None]
        request: dict[str, Any] = {}
        for table, key in keys:
            keys_of_table = request.setdefault(table, {"Keys": [], "ConsistentRead": True})["Keys"]
            if key not in keys_of_table:
                keys_of_table.append(key)
        found: dict[tuple[str, str], dict[str, Any]] = {}
        while request:
            status, answer = self._call("BatchGetItem", {"RequestItems": request}, headers)
            if status != 200:
                break
            for table, items in (answer.get("Responses") or {}).items():
                schema = self._schemas[table]
                for item in items:
                    found[_item_id(table, schema.key_of(item))] = item
            request = answer.get("UnprocessedKeys") or {}
        return [found.get(_item_id(table, key)) for table, key in keys]

    # -- requests --

    def handle(self, operation: str, body: bytes, headers: dict[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
        with self._lock:
            self._requests[operation] += 1
        try:
            params = json.loads(body or b"{}")
        except ValueError:
            return self.forward(body, headers)
        if operation in ("CreateTable", "DeleteTable", "UpdateTable"):
            self._schemas.pop(params.get("TableName", ""), None)
        handler = getattr(self, f"_op_{operation}", None)
        if handler is None:
            return self.forward(body, headers)
        self._local.sent = False
        try:
            return handler(params, body, headers)
        except (KeyError, TypeError, AttributeError, ValueError):
            if self._local.sent:
                raise
            # A request the model cannot read (a missing key, a malformed item): DynamoDB Local's own validation
            # answers it, exactly as if the model were not there.
            return self.forward(body, headers)

    def _refuse(self, operation: str, status: int, code: str, payload: dict[str, Any], *,
                conflict: bool) -> tuple[int, list[tuple[str, str]], bytes]:
        with self._lock:
            (self._conflicts if conflict else self._throttles)[operation] += 1
        return _error(status, code, payload)

    def _throttle(self, operation: str, refused: _Refused, headers: dict[str, str], kind: str):
        region = _region(headers)
        reasons = []
        for scope in sorted(refused.partitions):
            resource = _resource_of(scope)
            table, _, index = resource.partition("/")
            arn = f"arn:aws:dynamodb:{region}:000000000000:table/{table}" + (f"/index/{index}" if index else "")
            limit = "KeyRangeThroughputExceeded" if "|" in scope else "MaxOnDemandThroughputExceeded"
            reasons.append({"reason": f"{'Index' if index else 'Table'}{kind.title()}{limit}", "resource": arn})
        return self._refuse(operation, 400, "ProvisionedThroughputExceededException",
                            {"message": _THROTTLE_MESSAGE, "ThrottlingReasons": reasons}, conflict=False)

    def _single_write(self, operation: str, params: dict[str, Any], body: bytes, headers: dict[str, str]):
        table = params.get("TableName", "")
        schema = self.schema(table, headers)
        if schema is None:
            return self.forward(body, headers)
        key = schema.key_of(params["Item"]) if operation == "PutItem" else params.get("Key") or {}
        if schema.hash_key not in key:
            return self.forward(body, headers)
        item = _item_id(table, key)
        asked = params.get("ReturnValues", "NONE")
        if operation == "UpdateItem":
            # An update's old image cannot come back with its new one: read it first.
            old, = self._images([(table, key)], headers)
            new = old  # the estimate until the answer tells
        else:
            # A put or delete can return the old image itself (ALL_OLD), which saves a request; until then the
            # estimate is the new item alone (a delete: 1 WCU).
            old, new = None, params["Item"] if operation == "PutItem" else None
        now = time.monotonic()
        with self._lock:
            if self._held(item, now):
                conflict = True
            else:
                conflict = False
                try:
                    admitted = self._admit(write_charges(schema, key, old, new), now)
                except _Refused as refused:
                    refused_by = refused
                else:
                    refused_by = None
                    self._writing[item] += 1
        if conflict:
            return self._refuse(operation, 400, "TransactionConflictException", {"message": _CONFLICT_MESSAGE},
                                conflict=True)
        if refused_by is not None:
            return self._throttle(operation, refused_by, headers, WRITE)
        try:
            # Ask for the image the model lacks (an update's new one, a put's or delete's old one) in the answer,
            # unless the client asked for something else; what the client did not ask for is removed again.
            wanted = "ALL_NEW" if operation == "UpdateItem" else "ALL_OLD"
            send = json.dumps({**params, "ReturnValues": wanted}).encode() if asked == "NONE" else body
            status, answer_headers, answer = self.forward(send, headers)
            if status != 200:
                return status, answer_headers, answer  # a failed condition keeps the admitted estimate
            if asked in ("NONE", wanted):
                parsed = json.loads(answer)
                image = parsed.get("Attributes")
                if asked == "NONE" and "Attributes" in parsed:
                    del parsed["Attributes"]
                    answer = json.dumps(parsed).encode()
                    answer_headers = _rewritten(answer_headers, answer)
            else:  # UPDATED_OLD/UPDATED_NEW (or ALL_OLD of an update): read the new image after
                image, = self._images([(table, key)], headers)
            if operation == "UpdateItem":
                new = image
            else:  # a put or delete answers 200 only for ReturnValues NONE or ALL_OLD: the image is the old one
                old = image
            self._settle(admitted, write_charges(schema, key, old, new))
            return status, answer_headers, answer
        finally:
            with self._lock:
                self._release(self._writing, item)

    def _op_PutItem(self, params, body, headers):
        return self._single_write("PutItem", params, body, headers)

    def _op_UpdateItem(self, params, body, headers):
        return self._single_write("UpdateItem", params, body, headers)

    def _op_DeleteItem(self, params, body, headers):
        return self._single_write("DeleteItem", params, body, headers)

    def _op_TransactWriteItems(self, params, body, headers):
        actions = []  # (kind, schema, key, the item of a Put)
        for entry in params.get("TransactItems") or []:
            (kind, action), = entry.items()
            schema = self.schema(action.get("TableName", ""), headers)
            if schema is None:
                return self.forward(body, headers)
            key = schema.key_of(action["Item"]) if kind == "Put" else action.get("Key") or {}
            actions.append((kind, schema, key, action.get("Item")))
        olds = self._images([(schema.table, key) for _, schema, key, _ in actions], headers)

        def charges_of(news: list[dict[str, Any] | None]) -> list[list[Charge]]:
            result = []
            for (kind, schema, key, _), old, new in zip(actions, olds, news, strict=True):
                if kind == "ConditionCheck":  # as DynamoDB Local reports it: 2 WCU whatever the item's size
                    result.append([Charge(_partition(schema.table, None, schema.hash_key, key[schema.hash_key]),
                                          WRITE, write_units(0, transactional=True))])
                else:
                    result.append(write_charges(schema, key, old, new, transactional=True))
            return result

        estimated_news = [item if kind == "Put" else None if kind == "Delete" else old
                          for (kind, _, _, item), old in zip(actions, olds, strict=True)]
        estimate = charges_of(estimated_news)
        items = [_item_id(schema.table, key) for _, schema, key, _ in actions]
        # Without a token (botocore always sends one) a transaction is its own: it conflicts with every hold.
        token = params.get("ClientRequestToken") or f"tems-capacity-model-{id(params)}"
        now = time.monotonic()
        reasons: list[dict[str, str]] | None = None
        conflict = False
        with self._lock:
            held = [self._held(item, now, token=token) for item in items]
            if any(held):
                conflict = True
                self._conflicted_kinds.update(_item_kind(item) for item, is_held in zip(items, held, strict=True)
                                              if is_held)
                reasons = [{"Code": "TransactionConflict", "Message": _CONFLICT_MESSAGE} if is_held
                           else {"Code": "None"} for is_held in held]
            else:
                try:
                    admitted = self._admit([c for charges in estimate for c in charges], now)
                except _Refused as refused:
                    reasons = [{"Code": "ThrottlingError", "Message": _THROTTLE_MESSAGE}
                               if {c.partition for c in charges} & refused.partitions
                               or {_resource_of(c.partition) for c in charges} & refused.partitions
                               else {"Code": "None"} for charges in estimate]
                else:
                    for item in items:
                        self._transacting[item] += 1
                        self._holders[item] = token
        if reasons is not None:
            return self._cancelled("TransactWriteItems", reasons, conflict=conflict)
        forwarded_at = time.monotonic()
        try:
            status, answer_headers, answer = self.forward(body, headers)
        finally:
            with self._lock:
                now = time.monotonic()
                self._in_flight.append(now - forwarded_at)
                until = forwarded_at + self.hold_seconds
                for item in items:
                    self._release(self._transacting, item)
                    self._holds[item] = max(self._holds.get(item, 0.0), until)
                self._forget_holds(now)
        if status == 200 and any(kind == "Update" for kind, *_ in actions):
            updated = [i for i, (kind, *_) in enumerate(actions) if kind == "Update"]
            fetched = self._images([(actions[i][1].table, actions[i][2]) for i in updated], headers)
            news = list(estimated_news)
            for i, image in zip(updated, fetched, strict=True):
                news[i] = image
            self._settle(admitted, [c for charges in charges_of(news) for c in charges])
        # The answer comes when the transaction is over, as on AWS: a client never meets its own transaction
        # still holding the items (a request's next round would conflict with its previous one otherwise).
        if self.answer_after_hold:
            time.sleep(max(0.0, forwarded_at + self.hold_seconds - time.monotonic()))
        return status, answer_headers, answer

    def _forget_holds(self, now: float) -> None:
        # Keep the map small on a long run (expired holds mean nothing), at most once a second so a busy run
        # with many live holds does not rebuild it on every transaction.
        if len(self._holds) > 10_000 and now >= self._next_forget:
            self._next_forget = now + 1.0
            self._holds = {item: until for item, until in self._holds.items() if until > now}
            self._holders = {item: self._holders[item] for item in self._holds if item in self._holders}

    def _cancelled(self, operation: str, reasons: list[dict[str, str]], *, conflict: bool):
        codes = ", ".join(reason["Code"] for reason in reasons)
        return self._refuse(operation, 400, "TransactionCanceledException", {
            "Message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
            "CancellationReasons": reasons,
        }, conflict=conflict)

    def _op_TransactGetItems(self, params, body, headers):
        gets = []
        for entry in params.get("TransactItems") or []:
            action = entry.get("Get") or {}
            schema = self.schema(action.get("TableName", ""), headers)
            if schema is None:
                return self.forward(body, headers)
            key = action.get("Key") or {}
            gets.append((schema, key, Charge(_partition(schema.table, None, schema.hash_key, key[schema.hash_key]),
                                             READ, read_units(0, consistent=True, transactional=True))))
        now = time.monotonic()
        reasons = None
        conflict = False
        with self._lock:
            held = [self._held(_item_id(schema.table, key), now, by_writes_too=True) for schema, key, _ in gets]
            if any(held):
                conflict = True
                reasons = [{"Code": "TransactionConflict", "Message": _CONFLICT_MESSAGE} if is_held
                           else {"Code": "None"} for is_held in held]
            else:
                try:
                    admitted = self._admit([charge for *_, charge in gets], now)
                except _Refused as refused:
                    reasons = [{"Code": "ThrottlingError", "Message": _THROTTLE_MESSAGE}
                               if {charge.partition, _resource_of(charge.partition)} & refused.partitions
                               else {"Code": "None"} for *_, charge in gets]
        if reasons is not None:
            return self._cancelled("TransactGetItems", reasons, conflict=conflict)
        status, answer_headers, answer = self.forward(body, headers)
        if status == 200:
            responses = json.loads(answer).get("Responses") or []
            self._settle(admitted, [
                Charge(charge.partition, READ, read_units(item_size((response or {}).get("Item")), consistent=True,
                                                          transactional=True))
                for (*_, charge), response in zip(gets, responses, strict=False)])
        return status, answer_headers, answer

    def _read(self, operation: str, params: dict[str, Any], body: bytes, headers: dict[str, str]):
        table = params.get("TableName", "")
        schema = self.schema(table, headers)
        if schema is None:
            return self.forward(body, headers)
        consistent = bool(params.get("ConsistentRead"))
        index_name = params.get("IndexName")
        index = schema.index(index_name)
        hash_key = index.hash_key if index else schema.hash_key
        if operation == "GetItem":
            value = (params.get("Key") or {}).get(schema.hash_key)
        elif operation == "Query":
            value = _query_partition_value(params, hash_key)
        else:
            value = None  # a Scan reads every partition: only the table's ceiling applies
        resource = f"{table}/{index.name}" if index else table
        scope = _partition(table, index.name if index else None, hash_key, value) if value else resource
        now = time.monotonic()
        with self._lock:
            try:
                admitted = self._admit([Charge(scope, READ, read_units(0, consistent=consistent))], now)
            except _Refused as refused:
                refused_by = refused
            else:
                refused_by = None
        if refused_by is not None:
            return self._throttle(operation, refused_by, headers, READ)
        # Only the engine knows how much a Query or Scan read before its filter: ask it.
        asked = params.get("ReturnConsumedCapacity", "NONE")
        send = body if asked != "NONE" else json.dumps({**params, "ReturnConsumedCapacity": "TOTAL"}).encode()
        status, answer_headers, answer = self.forward(send, headers)
        if status == 200:
            parsed = json.loads(answer)
            consumed = (parsed.get("ConsumedCapacity") or {}).get("CapacityUnits")
            if consumed is not None:
                self._settle(admitted, [Charge(scope, READ, float(consumed))])
            if asked == "NONE":
                parsed.pop("ConsumedCapacity", None)
                answer = json.dumps(parsed).encode()
                answer_headers = _rewritten(answer_headers, answer)
        return status, answer_headers, answer

    def _op_GetItem(self, params, body, headers):
        return self._read("GetItem", params, body, headers)

    def _op_Query(self, params, body, headers):
        return self._read("Query", params, body, headers)

    def _op_Scan(self, params, body, headers):
        return self._read("Scan", params, body, headers)

    def _op_BatchGetItem(self, params, body, headers):
        admitted_keys: dict[str, dict[str, Any]] = {}
        refused_keys: dict[str, dict[str, Any]] = {}
        admissions = []  # (schema, key, consistent, _Admitted)
        any_refused = False
        for table, request in (params.get("RequestItems") or {}).items():
            schema = self.schema(table, headers)
            if schema is None:
                return self.forward(body, headers)
            consistent = bool(request.get("ConsistentRead"))
            for key in request.get("Keys") or []:
                charge = Charge(_partition(table, None, schema.hash_key, key[schema.hash_key]), READ,
                                read_units(0, consistent=consistent))
                with self._lock:
                    try:
                        admitted = self._admit([charge], time.monotonic())
                    except _Refused:
                        any_refused = True
                        refused_keys.setdefault(table, {**request, "Keys": []})["Keys"].append(key)
                        continue
                admissions.append((schema, key, consistent, charge, admitted))
                admitted_keys.setdefault(table, {**request, "Keys": []})["Keys"].append(key)
        if not any_refused:
            status, answer_headers, answer = self.forward(body, headers)
        elif not admitted_keys:
            return self._throttle("BatchGetItem", _Refused(set()), headers, READ)
        else:
            with self._lock:
                self._throttles["BatchGetItem"] += 1
            status, answer_headers, answer = self.forward(
                json.dumps({**params, "RequestItems": admitted_keys}).encode(), headers)
        if status != 200:
            return status, answer_headers, answer
        parsed = json.loads(answer)
        found = {_item_id(table, self._schemas[table].key_of(item)): item
                 for table, items in (parsed.get("Responses") or {}).items() for item in items}
        for schema, key, consistent, charge, admitted in admissions:
            size = item_size(found.get(_item_id(schema.table, key)))
            self._settle(admitted, [Charge(charge.partition, READ, read_units(size, consistent=consistent))])
        if any_refused:
            unprocessed = parsed.setdefault("UnprocessedKeys", {})
            for table, request in refused_keys.items():
                unprocessed.setdefault(table, {**request, "Keys": []})["Keys"].extend(request["Keys"])
            answer = json.dumps(parsed).encode()
            answer_headers = _rewritten(answer_headers, answer)
        return status, answer_headers, answer

    def _op_BatchWriteItem(self, params, body, headers):
        # Approximation: a batch put is charged for the new item only and a batch delete 1 WCU (no old image read).
        accepted: dict[str, list[dict[str, Any]]] = {}
        refused: dict[str, list[dict[str, Any]]] = {}
        conflicted = throttled = 0
        writing: list[tuple[str, str]] = []
        now = time.monotonic()
        for table, requests in (params.get("RequestItems") or {}).items():
            schema = self.schema(table, headers)
            if schema is None:
                return self.forward(body, headers)
            for request in requests:
                if "PutRequest" in request:
                    new = request["PutRequest"]["Item"]
                    key = schema.key_of(new)
                else:
                    new, key = None, request["DeleteRequest"]["Key"]
                item = _item_id(table, key)
                with self._lock:
                    if self._held(item, now):
                        conflicted += 1
                        refused.setdefault(table, []).append(request)
                        continue
                    try:
                        self._admit(write_charges(schema, key, None, new), now)
                    except _Refused:
                        throttled += 1
                        refused.setdefault(table, []).append(request)
                        continue
                    self._writing[item] += 1
                writing.append(item)
                accepted.setdefault(table, []).append(request)
        try:
            if not refused:
                return self.forward(body, headers)
            with self._lock:
                if conflicted:
                    self._conflicts["BatchWriteItem"] += 1
                if throttled:
                    self._throttles["BatchWriteItem"] += 1
            if not accepted:
                if throttled:
                    return _throttle_all()
                return _error(400, "TransactionConflictException", {"message": _CONFLICT_MESSAGE})
            status, answer_headers, answer = self.forward(
                json.dumps({**params, "RequestItems": accepted}).encode(), headers)
            if status != 200:
                return status, answer_headers, answer
            parsed = json.loads(answer)
            unprocessed = parsed.setdefault("UnprocessedItems", {})
            for table, requests in refused.items():
                unprocessed.setdefault(table, []).extend(requests)
            answer = json.dumps(parsed).encode()
            return status, _rewritten(answer_headers, answer), answer
        finally:
            with self._lock:
                for item in writing:
                    self._release(self._writing, item)


def _summary(seconds: Iterable[float]) -> dict[str, float]:
    if not seconds:
        return {"count": 0}
    ordered = sorted(seconds)
    return {"count": len(ordered), "p50": round(ordered[len(ordered) // 2] * 1000, 2),
            "p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
            "max": round(ordered[-1] * 1000, 2)}


def _throttle_all():
    return _error(400, "ProvisionedThroughputExceededException",
                  {"message": _THROTTLE_MESSAGE, "ThrottlingReasons": []})


_EQUALS = re.compile(r"(#?[\w.]+)\s*=\s*(:[\w]+)|(:[\w]+)\s*=\s*(#?[\w.]+)")


def _query_partition_value(params: dict[str, Any], hash_key: str) -> dict[str, Any] | None:
    """The partition key value a Query names (its ``hash = :value`` condition), or None if it cannot be read."""
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    for match in _EQUALS.finditer(params.get("KeyConditionExpression") or ""):
        name, placeholder = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
        if names.get(name, name) == hash_key:
            return values.get(placeholder)
    legacy = (params.get("KeyConditions") or {}).get(hash_key) or {}
    return (legacy.get("AttributeValueList") or [None])[0]


def _region(headers: dict[str, str]) -> str:
    # "AWS4-HMAC-SHA256 Credential=KEY/20261201/eu-west-1/dynamodb/aws4_request, ..."
    match = re.search(r"Credential=[^/]+/\d+/([^/]+)/", headers.get("Authorization", ""))
    return match.group(1) if match else "local"


def _error(status: int, code: str, payload: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    body = json.dumps({"__type": _ERROR_PREFIX + code, **payload}).encode()
    return status, [("Content-Type", _JSON), ("x-amzn-RequestId", "tems-capacity-model"),
                    ("x-amz-crc32", str(zlib.crc32(body) & 0xFFFFFFFF))], body


def _rewritten(headers: list[tuple[str, str]], body: bytes) -> list[tuple[str, str]]:
    """Upstream's headers for a body the model changed: the checksum botocore verifies must match the new bytes."""
    kept = [(name, value) for name, value in headers if name.lower() not in ("x-amz-crc32", "content-length")]
    return kept + [("x-amz-crc32", str(zlib.crc32(body) & 0xFFFFFFFF))]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default listen backlog of 5 drops the SYNs of a burst of new connections (botocore opens up to 64 at
    # once); the kernel's retry a second later would look like DynamoDB latency.
    request_queue_size = 256


_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "proxy-connection"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pool expects
    # Headers and body leave in two writes: with Nagle's algorithm on, the body waits for the client's delayed
    # ACK (40 ms on Linux), which made every request through the model 25 times slower than DynamoDB Local.
    disable_nagle_algorithm = True
    capacity_model: CapacityModel

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request would cost more than the model on a small machine

    def _send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path.rstrip("/") == REPORT_PATH:
            top = parse_qs(query).get("top")
            body = json.dumps(self.capacity_model.report(top=int(top[0]) if top else None), indent=1).encode()
            self._send(200, [("Content-Type", "application/json")], body)
        else:
            self._send(*self.capacity_model.forward(b"", self._headers()))

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") == RESET_PATH:
            self.capacity_model.reset()
            self._send(204, [], b"")
            return
        headers = self._headers()
        target = headers.get("X-Amz-Target", "")
        operation = target[len(_TARGET_PREFIX):] if target.startswith(_TARGET_PREFIX) else ""
        self._send(*self.capacity_model.handle(operation, body, headers))

    def _headers(self) -> dict[str, str]:
        return {name: value for name, value in self.headers.items() if name.lower() not in _HOP_BY_HOP}


def format_report(report: dict[str, Any], *, top: int = 10) -> str:
    """The report as lines of text; the scale factor always comes first."""
    lines = [
        (f"capacity model: scale x{report['scale']:g} (limits / {report['scale']:g} over a "
         f"{report['window_seconds']:g} s window, hold {report['hold_ms']:g} ms -> {report['hold_ms_real']:g} ms "
         f"real), {report['elapsed_s']:.1f} s"),
        (f"  throttles {report['throttles']} {report['throttles_by_operation']}, "
        f"conflicts {report['conflicts']} {report['conflicts_by_operation']}"),
    ]
    in_flight = report["transaction_in_flight_ms"]
    if in_flight["count"]:
        lines.append(f"  transactions in flight upstream: p50 {in_flight['p50']:g} ms, p99 {in_flight['p99']:g} ms "
                     f"(items are held at least this long; compare with the hold of {report['hold_ms_real']:g} ms)")
    for row in (report["tables"] + report["partitions"][:top]):
        parts = []
        for short, kind in (("wcu", WRITE), ("rcu", READ)):
            if f"peak_{short}_1s" in row:
                parts.append(f"{short.upper()} peak {row[f'peak_{short}_per_s_at_scale']:g}/s of "
                             f"{row[f'aws_limit_{short}_per_s']:g} (real {row[f'peak_{short}_1s']:g} of "
                             f"{row[f'limit_{short}_1s']:g}), {row[f'{kind}_throttles']} throttled")
        lines.append(f"  {row['scope']}: " + "; ".join(parts))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="DynamoDB Local, e.g. http://127.0.0.1:8765")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="durations x S: the hold time, the limits' 1 s window (default 1)")
    parser.add_argument("--hold-ms", type=float, default=10.0, help="how long a transaction holds its items")
    parser.add_argument("--partition-wcu", type=float, default=1000)
    parser.add_argument("--partition-rcu", type=float, default=3000)
    parser.add_argument("--table-wcu", type=float, default=4000)
    parser.add_argument("--table-rcu", type=float, default=12000)
    parser.add_argument("--answer-early", action="store_true",
                        help="answer a transaction before its hold ends (tests that stage a hold themselves)")
    args = parser.parse_args(argv)
    model = CapacityModel(upstream=args.upstream, port=args.port, scale=args.scale, hold_ms=args.hold_ms,
                          partition_wcu=args.partition_wcu, partition_rcu=args.partition_rcu,
                          table_wcu=args.table_wcu, table_rcu=args.table_rcu,
                          answer_after_hold=not args.answer_early).start()
    print(f"capacity model at {model.endpoint} -> {args.upstream}, scale x{args.scale:g}; "
          f"report: {model.endpoint}{REPORT_PATH} (Ctrl-C stops it and prints the report)", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        print(format_report(model.report()), flush=True)
        model.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
