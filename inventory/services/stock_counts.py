"""Stock count import: a CSV of counted quantities, validated whole before anything is written."""

from __future__ import annotations

import csv
import io
from collections.abc import Collection
from dataclasses import dataclass

from inventory.errors import InventoryError
from inventory.models import InventoryChange, InventoryItem
from inventory.services.item_versions import CHANGE, ITEM, MAX_QUANTITY, RetryPolicy, add_change
from inventory.services.items import item_modify
from inventory.services.metrics import measured
from tems import audit
from tems.audit import Actor
from tems.audit.services import AUDIT
from tems.audit.wording import ITEM_COUNTED
from tems.ids import ID_HELP, is_valid_id
from tems.transactions import LabelledTransaction, TransactionCancelled


@dataclass(frozen=True)
class ImportRow:
    line: int
    sku: str
    quantity: int
    outcome: str  # "updated" | "unchanged" | "failed"
    before: int | None = None
    detail: str = ""


# Bounds of one stock import. A university store counts a few hundred SKUs; 2,000 rows leaves room for the
# largest count while keeping one request short (docs/INVENTORY.md says how long a count takes).
MAX_IMPORT_ROWS = 2_000
# 2,000 rows of a 64-character SKU, a 10-digit count and a line end are under 160 kB.
MAX_IMPORT_BYTES = 256 * 1024
# A row is three items (the item, its history entry and its audit entry) and a transaction holds at most 100.
IMPORT_ROWS_PER_TRANSACTION = 33
# A row whose item changed between the check and its transaction is retried alone; it gives up (reported as
# failed, the person can import it again) after a few attempts instead of the default policy's 30.
IMPORT_POLICY = RetryPolicy(attempts=5, max_delay=0.2)


def stock_import(*, csv_text: str, actor: str, reason: str = "stock count", teams: Collection[str] | None = None,
                 policy: RetryPolicy = IMPORT_POLICY, audit_actor: Actor | None = None) -> list[ImportRow]:
    """Set each listed item's quantity to a counted value (CSV columns ``sku,quantity``, header optional).
    With ``teams``, only items those teams keep count: another team's item is refused as if it did not exist.

    The whole file is validated before anything is written: its size, every row's shape and quantity, no SKU
    twice, and every SKU an existing item (read with BatchGetItem, 100 keys a request). Any problem raises
    InventoryError('invalid') listing all of them, and nothing is written. ``audit_actor`` (the person,
    ``tems.audit.actor_of``): each counted item's audit entry, in the transaction that writes it.

    The counted rows are then written ``IMPORT_ROWS_PER_TRANSACTION`` to a transaction, each item conditioned on
    the version just read and with its history entry, so 1,000 rows are 10 reads and 31 writes. A count of one
    item says nothing about another, so the file is not one all-or-nothing change (it cannot be: a transaction
    holds 100 items): if someone changed an item in between, that transaction is cancelled whole and its rows
    go one by one through ``item_modify``; a row that still loses, or whose item was deleted, is reported as
    failed and the others apply.
    """
    if len(csv_text.encode()) > MAX_IMPORT_BYTES:
        raise InventoryError("invalid", f"Nothing was imported: the file is larger than {MAX_IMPORT_BYTES // 1024} kB.",
                             errors={"csv_file": [f"At most {MAX_IMPORT_BYTES // 1024} kB."]})
    rows, stored = _validated_counts(csv_text, teams=teams)
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
        applied = _import_chunk(chunk, stored, actor=actor, reason=reason, audit_actor=audit_actor)
        for line, sku, counted in chunk:
            report[line] = (ImportRow(line, sku, counted, "updated", int(stored[sku].quantity)) if applied
                            else _import_row(line, sku, counted, actor=actor, reason=reason, policy=policy,
                                             audit_actor=audit_actor))
    return [report[line] for line, _, _ in rows]


def _import_chunk(chunk: list[tuple[int, str, int]], stored: dict[str, InventoryItem], *, actor: str,
                  reason: str, audit_actor: Actor | None) -> bool:
    """Write the chunk's rows in one transaction; False (nothing written) when any item moved since the read."""
    with measured("import") as stats:
        transaction = LabelledTransaction()
        for line, sku, counted in chunk:
            item = stored[sku]
            now = add_change(transaction, item=item, after={**item.snapshot(), "quantity": counted},
                             kind=InventoryChange.IMPORT, actor=actor, reason=reason,
                             labels=(f"{ITEM}:{line}", f"{CHANGE}:{line}"))
            audit.add_entry(transaction, actor=audit_actor, action=ITEM_COUNTED, team=item.team, sku=sku,
                            before={"quantity": int(item.quantity)}, after={"quantity": counted}, now=now,
                            label=f"{AUDIT}:{line}")
        try:
            transaction.commit()
        except TransactionCancelled as cancelled:
            stats.count_cancellation(cancelled)
            return False
    return True


def _import_row(line: int, sku: str, counted: int, *, actor: str, reason: str, policy: RetryPolicy,
                audit_actor: Actor | None) -> ImportRow:
    seen: dict[str, int] = {}

    def set_count(snapshot: dict) -> dict:
        seen["before"] = snapshot["quantity"]
        return {"quantity": counted}

    try:
        item_modify(sku=sku, change=set_count, actor=actor, reason=reason, kind=InventoryChange.IMPORT,
                    policy=policy, operation="import", audit_actor=audit_actor)
    except InventoryError as error:
        return ImportRow(line, sku, counted, "failed", seen.get("before"), error.detail)
    return ImportRow(line, sku, counted, "unchanged" if seen.get("before") == counted else "updated",
                     seen.get("before"))


def _validated_counts(csv_text: str, *, teams: Collection[str] | None
                      ) -> tuple[list[tuple[int, str, int]], dict[str, InventoryItem]]:
    """The file's rows and the stored item of each, or InventoryError('invalid') listing every problem."""
    rows, problems = _parse_counts(csv_text)
    stored: dict[str, InventoryItem] = {}
    if rows and not problems:
        # A read to explain a refusal, and the version each write is conditioned on: nothing here decides.
        stored = {item.sku: item for item in InventoryItem.batch_get(
            [InventoryItem.key_for(sku) for _, sku, _ in rows], consistent_read=True)
            if teams is None or item.team in teams}
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
