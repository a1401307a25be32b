"""Writes of the inventory app. Every promise is kept by a DynamoDB condition, never by a prior read.

Each successful change of an item is ONE TransactWriteItems of
  - the item itself, conditioned on the version the change was computed from, which it bumps by one, and
  - its history entry ``CHANGE#<new version>`` (who, when, before, after, reason), put only if absent,
(plus, for an adjustment, the COMPLETED idempotency record of the tap). So history can never miss a change or
record one that did not happen, and the versions in history are contiguous.

Adjustments ("sold 2") need no version from the client, but their history entry needs the version they
create, and a transaction cannot compute one item's key from another item's new value. So the service reads
the item (strongly consistent), computes version+1, and conditions the write on that version *and* on the
stock guard. If only the version moved (another change landed first), nothing is wrong: it re-reads and tries
again, so concurrent adjustments all apply. If the guard failed, the failed write's own ALL_OLD image says
how much is in stock and the adjustment is refused with that number.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime


from pynamodb.exceptions import PynamoDBException

from inventory.errors import InventoryError
from inventory.models import InventoryChange, InventoryItem, OperationMetrics
from inventory.selectors import change_to_dict, item_get, item_history, item_to_dict
from tems.clock import utcnow
from tems.dynamo import DynamoMeter, metered
from tems.ids import ID_HELP, is_valid_id
from tems.idempotency import (
    StoredResponse, completed_record, fingerprint, record_is_absent_or_expired, replay_from_raw,
)
from tems.transactions import (
    CONDITIONAL_CHECK_FAILED, TRANSACTION_CONFLICT, LabelledTransaction, TransactionCancelled, retry_on_conflict,
)

logger = logging.getLogger(__name__)

# Labels of the items in a change's transaction; cancellation reasons come back keyed by these.
ITEM = "item"
CHANGE = "change"
IDEMPOTENCY = "idempotency"
METRICS = "metrics"
# Many writers of one item finish at once; their metrics transactions then conflict and retry with jitter.
METRICS_ATTEMPTS = 12

MAX_QUANTITY = 10_000_000


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and full jitter (sleep a random time in [0, cap_n]).

    Full jitter spreads colliding writers apart instead of waking them in lockstep. The values come from
    measuring twenty writers on one item on DynamoDB Local: with a 0.1 s cap they spent most attempts colliding
    again (mean 5 attempts, a few callers gave up after 25); letting the cap grow to 1 s halved the attempts and
    the wall time, and the unluckiest writer needed 12 attempts, so 30 leaves a wide margin. The first retries
    stay short (10, 20, 40 ms caps) so the common case of one collision costs a person almost nothing.
    ``sleep`` and ``uniform`` are injectable so tests need neither real time nor luck.
    """

    attempts: int = 30
    base_delay: float = 0.01
    max_delay: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    uniform: Callable[[float, float], float] = random.uniform

    def backoff(self, retry: int) -> None:
        self.sleep(self.uniform(0, min(self.max_delay, self.base_delay * 2**retry)))


DEFAULT_POLICY = RetryPolicy()


# --- metrics ----------------------------------------------------------------------------------------------

@dataclass
class OperationStats:
    """What one call of an operation cost and met on its way; added to the operation's running totals."""

    operation: str
    condition_failures: int = 0
    transaction_conflicts: int = 0
    retries: int = 0
    exhausted: bool = False
    replayed: bool = False
    outcome: str = "error"  # "succeeded" | "refused" | "error"
    meter: DynamoMeter | None = field(default=None, repr=False)

    def count_cancellation(self, cancelled: TransactionCancelled) -> None:
        # Per refused write, not per failed item: a lost race fails both the item's version check and the
        # history entry (the winner already wrote CHANGE#<that version>), and that is one conflict, not two.
        codes = {reason.code for reason in cancelled.reasons.values()}
        self.condition_failures += int(CONDITIONAL_CHECK_FAILED in codes)
        self.transaction_conflicts += int(TRANSACTION_CONFLICT in codes)


@contextmanager
def _measured(operation: str) -> Iterator[OperationStats]:
    stats = OperationStats(operation)
    try:
        with metered() as meter:
            stats.meter = meter
            yield stats
        stats.outcome = "succeeded"
    except InventoryError:
        stats.outcome = "refused"
        raise
    finally:
        # Recorded after the operation's own requests, outside its meter: metrics must not bill the operation.
        metrics_record(stats=stats)


def metrics_record(*, stats: OperationStats) -> None:
    """Add one call's numbers to ``OP#<operation>`` with one unconditional ADD (no read), applied exactly once.

    A failure to record is logged and swallowed: losing a metric must never fail the change it describes.
    """
    meter = stats.meter or DynamoMeter()
    m = OperationMetrics
    actions = [
        m.operation.set(stats.operation),
        m.updated_at.set(utcnow()),
        m.calls.add(1),
        m.succeeded.add(int(stats.outcome == "succeeded")),
        m.refused.add(int(stats.outcome == "refused" and not stats.exhausted)),
        m.exhausted.add(int(stats.exhausted)),
        m.replays.add(int(stats.replayed)),
        m.condition_failures.add(stats.condition_failures),
        m.transaction_conflicts.add(stats.transaction_conflicts),
        m.retries.add(stats.retries),
        m.requests.add(meter.total_requests),
        m.write_capacity.add(meter.write_capacity),
        m.read_capacity.add(meter.read_capacity),
    ]
    def record() -> None:
        # A one-item TransactWriteItems rather than an UpdateItem: botocore repeats its ClientRequestToken on
        # its own retries, so an ADD whose answer was lost is not added a second time (an UpdateItem would be).
        transaction = LabelledTransaction()
        transaction.update(METRICS, OperationMetrics(*OperationMetrics.key_for(stats.operation)), actions=actions)
        transaction.commit()

    try:
        # Concurrent recorders of one operation conflict as transactions do: go again, bounded.
        retry_on_conflict(record, attempts=METRICS_ATTEMPTS, on_exhausted=lambda last: last)
    except (PynamoDBException, TransactionCancelled):
        logger.warning("could not record inventory metrics for %s", stats.operation, exc_info=True)


# --- create -----------------------------------------------------------------------------------------------

def item_create(*, sku: str, name: str, description: str = "", quantity: int = 0, location: str = "",
                actor: str) -> InventoryItem:
    """Create an item and its first history entry (version 1) in one transaction.

    Raises InventoryError('conflict') if the sku exists: the put is conditional, nothing is read first.
    """
    _check_quantity(quantity)
    with _measured("create") as stats:
        now = utcnow()
        item = InventoryItem(
            *InventoryItem.key_for(sku), sku=sku, name=name, description=description, quantity=quantity,
            location=location, created_at=now, created_by=actor, updated_at=now, updated_by=actor, gsi1sk=sku,
        )
        change = _change(sku=sku, version=1, kind=InventoryChange.CREATE, actor=actor, at=now, before=None,
                         after=item.snapshot())
        transaction = LabelledTransaction()
        # The version attribute adds attribute_not_exists(version); the key condition says what we mean.
        transaction.save(ITEM, item, condition=InventoryItem.pk.does_not_exist())
        transaction.save(CHANGE, change, condition=InventoryChange.sk.does_not_exist())
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            stats.count_cancellation(cancelled)
            if cancelled.failed(ITEM):
                raise InventoryError("conflict", f"An item with sku {sku!r} already exists.", sku=sku) from None
            raise
        item.version = 1
        return item


# --- versioned edit (a person's form or an API PUT with If-Match) -----------------------------------------

def item_update(*, sku: str, expected_version: int, name: str, description: str, quantity: int, location: str,
                actor: str, policy: RetryPolicy = DEFAULT_POLICY) -> InventoryItem:
    """Apply an edit only if the item is still at ``expected_version``: one conditional write with its history.

    Raises InventoryError: 'not_found'; 'precondition_failed' when someone changed the item since
    ``expected_version`` (``extra`` holds ``current``, the stored item, and ``changes``, what happened in
    between, newest first, so the person can compare and choose); 'invalid' for a negative quantity.
    Nothing is written in any of these cases.
    """
    _check_quantity(quantity)
    wanted = {"name": name, "description": description, "quantity": quantity, "location": location}
    with _measured("edit") as stats:
        for attempt in range(policy.attempts):
            # This read supplies the "before" of the history entry. It cannot let a stale edit through:
            # versions only grow, and the write below is conditioned on the version anyway.
            current = item_get(sku=sku)
            if int(current.version) != expected_version:
                raise _stale(sku=sku, expected_version=expected_version, current=current)
            if current.snapshot() == wanted:
                return current  # saving an unchanged form is not a change: no version, no history
            try:
                return _write_change(item=current, after=wanted, kind=InventoryChange.EDIT, actor=actor)
            except TransactionCancelled as cancelled:
                stats.count_cancellation(cancelled)
                if cancelled.failed(ITEM):
                    raise _stale(sku=sku, expected_version=expected_version,
                                 current=_item_from_failure(cancelled, sku)) from None
                if not cancelled.is_conflict:
                    raise
            # Another transaction held the item for a moment; our condition may well still hold.
            stats.retries += 1
            policy.backoff(attempt)
        stats.exhausted = True
        raise _busy(sku, policy.attempts)


# --- programmatic read-modify-write -----------------------------------------------------------------------

def item_modify(*, sku: str, change: Callable[[dict], dict], actor: str, reason: str = "",
                kind: str = InventoryChange.EDIT, policy: RetryPolicy = DEFAULT_POLICY,
                operation: str = "modify") -> InventoryItem:
    """Compute new values from the stored ones and write them, retrying until no one else got in between.

    ``change(snapshot)`` gets the tracked fields as stored and returns the fields to change; it may be called
    more than once, so it must be pure. Each attempt: strongly consistent read, compute, one conditional
    transaction (version = the version read). On a lost race: backoff with full jitter, re-read, recompute.
    Returns the item as written (or as stored when the change alters nothing: no write, no history).

    Raises InventoryError: 'not_found'; 'invalid' (the change would make the item invalid); 'conflict' when
    ``policy.attempts`` attempts all lost their race. Never overwrites a change it did not see.
    """
    with _measured(operation) as stats:
        for attempt in range(policy.attempts):
            current = item_get(sku=sku)
            before = current.snapshot()
            after = {**before, **change(dict(before))}
            _check_quantity(after["quantity"])
            if after == before:
                return current
            try:
                return _write_change(item=current, after=after, kind=kind, actor=actor, reason=reason)
            except TransactionCancelled as cancelled:
                stats.count_cancellation(cancelled)
                if cancelled.failed(ITEM) and cancelled.reasons[ITEM].raw_item is None:
                    raise _not_found(sku) from None
                if not (cancelled.failed(ITEM) or cancelled.is_conflict):
                    raise
            stats.retries += 1
            policy.backoff(attempt)
        stats.exhausted = True
        raise InventoryError(
            "conflict",
            f"Gave up on {sku!r} after {policy.attempts} attempts: others kept changing it in between. "
            "Nothing was written; try again.",
            sku=sku, attempts=policy.attempts,
        )


@dataclass(frozen=True)
class ImportRow:
    line: int
    sku: str
    quantity: int
    outcome: str  # "updated" | "unchanged" | "failed"
    before: int | None = None
    detail: str = ""


# Bounds of one stock import. A university store counts a few hundred SKUs; 2,000 rows leaves room for the
# largest count while keeping one request short (1,000 rows: see docs/INVENTORY.md for the measured time).
MAX_IMPORT_ROWS = 2_000
# 2,000 rows of a 64-character SKU, a 10-digit count and a line end are under 160 kB.
MAX_IMPORT_BYTES = 256 * 1024
# A row is two items (the item and its history entry) and a transaction holds at most 100.
IMPORT_ROWS_PER_TRANSACTION = 50
# A row whose item changed between the check and its transaction is retried alone; it gives up (reported as
# failed, the person can import it again) after a few attempts instead of the default policy's 30.
IMPORT_POLICY = RetryPolicy(attempts=5, max_delay=0.2)


def stock_import(*, csv_text: str, actor: str, reason: str = "stock count",
                 policy: RetryPolicy = IMPORT_POLICY) -> list[ImportRow]:
    """Set each listed item's quantity to a counted value (CSV columns ``sku,quantity``, header optional).

    The whole file is validated before anything is written: its size, every row's shape and quantity, no SKU
    twice, and every SKU an existing item (read with BatchGetItem, 100 keys a request). Any problem raises
    InventoryError('invalid') listing all of them, and nothing is written.

    The counted rows are then written ``IMPORT_ROWS_PER_TRANSACTION`` to a transaction, each item conditioned on
    the version just read and with its history entry, so 1,000 rows are 10 reads and 20 writes. A count of one
    item says nothing about another, so the file is not one all-or-nothing change (it cannot be: a transaction
    holds 100 items): if someone changed an item in between, that transaction is cancelled whole and its rows
    go one by one through ``item_modify``; a row that still loses, or whose item was deleted, is reported as
    failed and the others apply.
    """
    if len(csv_text.encode()) > MAX_IMPORT_BYTES:
        raise InventoryError("invalid", f"Nothing was imported: the file is larger than {MAX_IMPORT_BYTES // 1024} kB.",
                             errors={"csv_file": [f"At most {MAX_IMPORT_BYTES // 1024} kB."]})
    rows, stored = _validated_counts(csv_text)
    report: dict[int, ImportRow] = {}
    to_write = []
    for line, sku, counted in rows:
        before = int(stored[sku].quantity)
        if before == counted:
            report[line] = ImportRow(line, sku, counted, "unchanged", before)
        else:
            to_write.append((line, sku, counted))
    for start in range(0, len(to_write), IMPORT_ROWS_PER_TRANSACTION):
        chunk = to_write[start:start + IMPORT_ROWS_PER_TRANSACTION]
        applied = _import_chunk(chunk, stored, actor=actor, reason=reason)
        for line, sku, counted in chunk:
            report[line] = (ImportRow(line, sku, counted, "updated", int(stored[sku].quantity)) if applied
                            else _import_row(line, sku, counted, actor=actor, reason=reason, policy=policy))
    return [report[line] for line, _, _ in rows]


def _import_chunk(chunk: list[tuple[int, str, int]], stored: dict[str, InventoryItem], *, actor: str,
                  reason: str) -> bool:
    """Write the chunk's rows in one transaction; False (nothing written) when any item moved since the read."""
    with _measured("import") as stats:
        transaction = LabelledTransaction()
        for line, sku, counted in chunk:
            item = stored[sku]
            _add_change(transaction, item=item, after={**item.snapshot(), "quantity": counted},
                        kind=InventoryChange.IMPORT, actor=actor, reason=reason,
                        labels=(f"{ITEM}:{line}", f"{CHANGE}:{line}"))
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            stats.count_cancellation(cancelled)
            return False
    return True


def _import_row(line: int, sku: str, counted: int, *, actor: str, reason: str, policy: RetryPolicy) -> ImportRow:
    seen: dict[str, int] = {}

    def set_count(snapshot: dict) -> dict:
        seen["before"] = snapshot["quantity"]
        return {"quantity": counted}

    try:
        item_modify(sku=sku, change=set_count, actor=actor, reason=reason, kind=InventoryChange.IMPORT,
                    policy=policy, operation="import")
    except InventoryError as error:
        return ImportRow(line, sku, counted, "failed", seen.get("before"), error.detail)
    return ImportRow(line, sku, counted, "unchanged" if seen.get("before") == counted else "updated",
                     seen.get("before"))


def _validated_counts(csv_text: str) -> tuple[list[tuple[int, str, int]], dict[str, InventoryItem]]:
    """The file's rows and the stored item of each, or InventoryError('invalid') listing every problem."""
    rows, problems = _parse_counts(csv_text)
    stored: dict[str, InventoryItem] = {}
    if rows and not problems:
        # A read to explain a refusal, and the version each write is conditioned on: nothing here decides.
        stored = {item.sku: item for item in InventoryItem.batch_get(
            [InventoryItem.key_for(sku) for _, sku, _ in rows], consistent_read=True)}
        problems = [f"line {line}: there is no inventory item {sku!r}" for line, sku, _ in rows if sku not in stored]
    if problems:
        raise InventoryError("invalid", "Nothing was imported: " + "; ".join(problems) + ".",
                             errors={"csv_file": problems})
    if not rows:
        raise InventoryError("invalid", "The file lists no items.", errors={"csv_file": ["No rows found."]})
    return rows, stored


def _parse_counts(csv_text: str) -> tuple[list[tuple[int, str, int]], list[str]]:

    rows, problems, first_line = [], [], {}
    for line, record in enumerate(csv.reader(io.StringIO(csv_text)), start=1):
        cells = [cell.strip() for cell in record]
        if not any(cells):
            continue
        if line == 1 and [c.lower() for c in cells[:2]] == ["sku", "quantity"]:
            continue
        if len(rows) >= MAX_IMPORT_ROWS:
            problems.append(f"more than {MAX_IMPORT_ROWS} rows: split the file")
            break
        if len(cells) < 2 or not cells[0]:
            problems.append(f"line {line}: expected 'sku,quantity'")
            continue
        if not is_valid_id(cells[0]):
            problems.append(f"line {line}: {cells[0][:20]!r}... is not a SKU. {ID_HELP}" if len(cells[0]) > 20
                            else f"line {line}: {cells[0]!r} is not a SKU. {ID_HELP}")
            continue
        sku = cells[0]
        if sku in first_line:
            problems.append(f"line {line}: {sku} is already counted on line {first_line[sku]}")
            continue
        first_line[sku] = line
        try:
            counted = int(cells[1])
        except ValueError:
            problems.append(f"line {line}: quantity {cells[1][:40]!r} is not a whole number")
            continue
        if not 0 <= counted <= MAX_QUANTITY:
            problems.append(f"line {line}: quantity must be between 0 and {MAX_QUANTITY}")
            continue
        rows.append((line, sku, counted))
    return rows, problems


# --- atomic adjustments -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Adjustment:
    quantity: int
    version: int
    response: StoredResponse  # what the first application answered; a replay answers exactly this
    replayed: bool = False


def adjustment_fingerprint(*, sku: str, actor: str, delta: int, reason: str) -> str:
    # The page and the API share one fingerprint, so one tap is one adjustment whichever way it arrives.
    # ``actor`` here is whoever scopes the key: the caller's immutable user key (see item_adjust).
    return fingerprint(method="POST", route=f"inventory/{sku}/adjustments", user_id=actor,
                       payload={"delta": delta, "reason": reason})


def item_adjust(*, sku: str, delta: int, reason: str, actor: str, idempotency_key: str | None = None,
                user_id: str | None = None, policy: RetryPolicy = DEFAULT_POLICY) -> Adjustment:
    """Add ``delta`` (negative for "sold", positive for "received") to the stock; concurrent calls all apply.

    One transaction per attempt: the item (ADD quantity, version = version read, and for a decrement
    quantity >= -delta), its history entry, and with ``idempotency_key`` the tap's COMPLETED record. A key seen
    before answers the first outcome again (``replayed``) and changes nothing. ``actor`` is the name history
    shows; ``user_id`` (``tems.identity.user_key``) scopes the key, so a later account that takes a deleted
    one's name never shares its records. Callers without an account (the lab's writers) fall back to ``actor``.

    Raises InventoryError: 'invalid' (delta 0, or past MAX_QUANTITY in stock); 'not_found'; 'conflict' when the stock cannot cover a
    decrement (``extra['on_hand']``); 'unprocessable' when the key was used for a different request; 'busy'
    when ``policy.attempts`` attempts all lost their race (nothing written; retrying with the key is safe).
    """
    if delta == 0:
        raise InventoryError("invalid", "An adjustment must change the stock: delta cannot be 0.",
                             errors={"delta": ["Must not be 0."]})
    if abs(delta) > MAX_QUANTITY:
        raise InventoryError("invalid", f"An adjustment is at most {MAX_QUANTITY} units.",
                             errors={"delta": [f"Must be between -{MAX_QUANTITY} and {MAX_QUANTITY}."]})
    needed = max(0, -delta)
    scope = user_id or actor
    request_fingerprint = adjustment_fingerprint(sku=sku, actor=scope, delta=delta, reason=reason)
    with _measured("adjust") as stats:
        for attempt in range(policy.attempts):
            current = item_get(sku=sku)
            version = int(current.version) + 1
            quantity = int(current.quantity) + delta
            response = StoredResponse.json({"quantity": quantity, "version": version}, status=200)
            record = None
            if idempotency_key:
                record = completed_record(user_id=scope, key=idempotency_key, fingerprint=request_fingerprint,
                                          response=response)
            # The stock bounds are part of the write's condition: a decrement cannot go below 0, an increment
            # cannot take the item past MAX_QUANTITY (past which the item could no longer be edited).
            guard = (InventoryItem.quantity >= needed if needed
                     else InventoryItem.quantity <= MAX_QUANTITY - delta)
            try:
                _write_change(item=current, after={**current.snapshot(), "quantity": quantity},
                              kind=InventoryChange.ADJUST, actor=actor, reason=reason, delta=delta,
                              guard=guard, record=record)
                return Adjustment(quantity, version, response)
            except TransactionCancelled as cancelled:
                stats.count_cancellation(cancelled)
                if cancelled.failed(IDEMPOTENCY):
                    # Already applied (or the key was reused for something else, which replay refuses with 422).
                    stored = replay_from_raw(cancelled.reasons[IDEMPOTENCY].raw_item,
                                             fingerprint=request_fingerprint)
                    if stored is None:
                        raise _busy(sku, attempt + 1) from None
                    stats.replayed = True
                    data = json.loads(stored.body)
                    return Adjustment(int(data["quantity"]), int(data["version"]), stored, replayed=True)
                if cancelled.failed(ITEM):
                    stored_item = _item_from_failure(cancelled, sku)
                    # The item as the failed write saw it: if it cannot cover the decrement, that is the answer,
                    # whatever the version did. Otherwise only the version moved: go round again.
                    if int(stored_item.quantity) < needed:
                        on_hand = int(stored_item.quantity)
                        raise InventoryError(
                            "conflict", f"Only {on_hand} in stock: cannot take {needed}.",
                            on_hand=on_hand, requested=needed, sku=sku,
                        ) from None
                    if delta > 0 and int(stored_item.quantity) + delta > MAX_QUANTITY:
                        room = MAX_QUANTITY - int(stored_item.quantity)
                        raise InventoryError(
                            "invalid", f"At most {MAX_QUANTITY} can be in stock: room for {room} more, not {delta}.",
                            errors={"delta": [f"At most {room} more fit."], "amount": [f"At most {room} more fit."]},
                        ) from None
                elif not cancelled.is_conflict:
                    raise
            stats.retries += 1
            policy.backoff(attempt)
        stats.exhausted = True
        raise _busy(sku, policy.attempts)


# --- shared pieces ----------------------------------------------------------------------------------------

def _write_change(*, item: InventoryItem, after: dict, kind: str, actor: str, reason: str = "",
                  delta: int | None = None, guard=None, record=None) -> InventoryItem:
    """One transaction: the item moves from ``item.version`` to the next with ``after``, plus its history.

    Raises TransactionCancelled (reasons by label) when the version moved, the guard failed, the history entry
    exists or the idempotency record exists; the item's failure carries its ALL_OLD image.
    """
    transaction = LabelledTransaction()
    now = _add_change(transaction, item=item, after=after, kind=kind, actor=actor, reason=reason, delta=delta,
                      guard=guard)
    if record is not None:
        transaction.save(IDEMPOTENCY, record, condition=record_is_absent_or_expired(now),
                         return_old_on_failure=True)
    transaction.commit()
    return InventoryItem(
        *InventoryItem.key_for(item.sku), sku=item.sku, created_at=item.created_at, created_by=item.created_by,
        updated_at=now, updated_by=actor, version=int(item.version) + 1, gsi1sk=item.gsi1sk, **after,
    )


def _add_change(transaction: LabelledTransaction, *, item: InventoryItem, after: dict, kind: str, actor: str,
                reason: str = "", delta: int | None = None, guard=None, labels: tuple[str, str] = (ITEM, CHANGE),
                ) -> datetime:
    """Add the item's move to its next version and its history entry to ``transaction``; returns their time."""
    item_label, change_label = labels
    expected = int(item.version)
    now = utcnow()
    before = item.snapshot()
    # PynamoDB adds "version = :expected" to the condition and "ADD version 1" to the actions: the version
    # check and the change are one write.
    target = InventoryItem(*InventoryItem.key_for(item.sku), version=expected)
    actions = [InventoryItem.updated_at.set(now), InventoryItem.updated_by.set(actor)]
    if delta is not None:
        actions.append(InventoryItem.quantity.add(delta))
    elif after["quantity"] != before["quantity"]:
        actions.append(InventoryItem.quantity.set(after["quantity"]))
    for name in ("name", "description", "location"):
        if after[name] != before[name]:
            actions.append(getattr(InventoryItem, name).set(after[name]))
    condition = InventoryItem.pk.exists()
    if guard is not None:
        condition &= guard
    transaction.update(item_label, target, actions=actions, condition=condition, return_old_on_failure=True)
    transaction.save(change_label, _change(sku=item.sku, version=expected + 1, kind=kind, actor=actor, at=now,
                                           before=before, after=after, reason=reason, delta=delta),
                     condition=InventoryChange.sk.does_not_exist())
    return now


def _change(*, sku: str, version: int, kind: str, actor: str, at: datetime, before: dict | None, after: dict,
            reason: str = "", delta: int | None = None) -> InventoryChange:
    return InventoryChange(
        *InventoryChange.key_for(sku, version), sku=sku, version=version, kind=kind, changed_by=actor,
        changed_at=at, reason=reason, delta=delta, before=before, after=after,
    )


def _item_from_failure(cancelled: TransactionCancelled, sku: str) -> InventoryItem:
    raw = cancelled.reasons[ITEM].raw_item
    if raw is None:
        # ALL_OLD of a missing item is empty: the item is not there (deleted or never created).
        raise _not_found(sku)
    return InventoryItem.from_raw_data(raw)


def _stale(*, sku: str, expected_version: int, current: InventoryItem) -> InventoryError:
    # Reads only to explain the refusal; the refusal itself came from the version.
    changes = item_history(sku=sku, after_version=expected_version)
    who = ", ".join(dict.fromkeys(change.changed_by for change in reversed(changes))) or "Someone"
    return InventoryError(
        "precondition_failed",
        f"{who} changed this item after you opened it (version {expected_version} → {int(current.version)}). "
        "Nothing of yours was saved.",
        current=item_to_dict(current), changes=[change_to_dict(change) for change in changes],
        expected_version=expected_version,
    )


def _not_found(sku: str) -> InventoryError:
    return InventoryError("not_found", f"There is no inventory item with sku {sku!r}.")


def _busy(sku: str, attempts: int) -> InventoryError:
    return InventoryError("busy", f"{sku!r} is being changed by many people at once; nothing was written after "
                                  f"{attempts} attempts. Try again.", retry_after=1)


def _check_quantity(quantity: int) -> None:
    if not 0 <= quantity <= MAX_QUANTITY:
        raise InventoryError("invalid", f"Quantity must be between 0 and {MAX_QUANTITY}; got {quantity}.",
                             errors={"quantity": [f"Must be between 0 and {MAX_QUANTITY}."]})

