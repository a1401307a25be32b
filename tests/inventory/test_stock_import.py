"""The CSV stock import is validated as a whole, bounded in size and written in a bounded number of requests."""

import pytest

from inventory import selectors, services
from inventory.errors import InventoryError
from inventory.models import InventoryItem
from inventory.services import stock_counts as stock_counts_module
from tems.metering import metered


def quantity(sku: str) -> int:
    return int(selectors.item_get(sku=sku).quantity)


def refused(csv_text: str) -> list[str]:
    with pytest.raises(InventoryError) as caught:
        services.stock_import(csv_text=csv_text, actor="bo")
    assert caught.value.code == "invalid" and caught.value.detail.startswith("Nothing was imported")
    return caught.value.errors["csv_file"]


def test_an_unknown_sku_anywhere_writes_nothing_and_names_the_line(item):
    problems = refused("sku,quantity\nTSHIRT-M,7\nNOPE,3\nALSO-NOPE,1\n")
    assert problems == ["line 3: there is no inventory item 'NOPE'",
                        "line 4: there is no inventory item 'ALSO-NOPE'"]
    assert quantity("TSHIRT-M") == 10 and len(selectors.item_history(sku="TSHIRT-M")) == 1


def test_every_problem_of_the_file_is_listed_at_once(item):
    long_sku = "X" * 3000
    problems = refused(f"TSHIRT-M,7\nTSHIRT-M,8\n{long_sku},1\nTSHIRT-M,lots\nBAD SKU,2\n")
    assert problems[0] == "line 2: TSHIRT-M is already counted on line 1"
    assert problems[1].startswith("line 3: 'XXXX") and "is not a SKU" in problems[1] and len(problems[1]) < 200
    assert problems[2] == "line 4: TSHIRT-M is already counted on line 1"
    assert problems[3].startswith("line 5: 'BAD SKU' is not a SKU")
    assert quantity("TSHIRT-M") == 10


def test_too_many_rows_or_bytes_is_refused_before_any_read(moto_ddb, monkeypatch):
    monkeypatch.setattr(stock_counts_module, "MAX_IMPORT_ROWS", 3)
    assert refused("A,1\nB,1\nC,1\nD,1\nE,1\n") == ["more than 3 rows: split the file"]
    big = "A,1\n" * (services.MAX_IMPORT_BYTES // 4 + 1)
    with pytest.raises(InventoryError, match="larger than 256 kB"):
        services.stock_import(csv_text=big, actor="bo")


def test_the_upload_form_applies_the_same_byte_bound(moto_ddb, staff_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("count.csv", b"A,1\n" * (services.MAX_IMPORT_BYTES // 4 + 1), "text/csv")
    response = staff_client.post("/inventory/import/", {"csv_file": upload, "reason": "count"})
    assert response.status_code == 400 and "too big for a stock count (256 kB at most)" in response.content.decode()


def test_a_thousand_rows_apply_in_a_bounded_number_of_requests(ddb):
    skus = [f"SKU-{n:04d}" for n in range(1000)]
    with InventoryItem.batch_write() as batch:
        for sku in skus:
            batch.save(InventoryItem(*InventoryItem.key_for(sku), sku=sku, name=sku, quantity=1, gsi1sk=sku,
                                      version=1))
    csv_text = "sku,quantity\n" + "".join(f"{sku},{n}\n" for n, sku in enumerate(skus))
    with metered() as meter:
        report = services.stock_import(csv_text=csv_text, actor="bo")
    assert [row.outcome for row in report].count("updated") == 999  # SKU-0001 was already 1
    assert [row.line for row in report] == list(range(2, 1002))  # in file order
    assert quantity("SKU-0999") == 999
    # Its time is its requests: the old import wrote one row at a time, which ran for minutes on 2,500 rows.
    # Ten BatchGetItems of 100 keys, then 999 changed rows in transactions of IMPORT_ROWS_PER_TRANSACTION,
    # each followed by its metrics record.
    chunks = -(-999 // stock_counts_module.IMPORT_ROWS_PER_TRANSACTION)
    assert meter.requests == {"BatchGetItem": 10, "TransactWriteItems": 2 * chunks}, meter.requests


def test_an_item_changed_after_the_check_is_retried_alone_and_nothing_is_lost(item, monkeypatch):
    services.item_create(sku="MUG", name="Mug", quantity=4, actor="ana")
    original = stock_counts_module._import_chunk

    def someone_sells_first(chunk, stored, **kwargs):
        services.item_adjust(sku="MUG", delta=-1, reason="sold", actor="cy")  # MUG moves to version 2
        return original(chunk, stored, **kwargs)

    monkeypatch.setattr(stock_counts_module, "_import_chunk", someone_sells_first)
    report = services.stock_import(csv_text="TSHIRT-M,7\nMUG,9\n", actor="bo")
    assert [(r.sku, r.outcome, r.before) for r in report] == [("TSHIRT-M", "updated", 10), ("MUG", "updated", 3)]
    assert (quantity("TSHIRT-M"), quantity("MUG")) == (7, 9)
    assert [c.version for c in selectors.item_history(sku="MUG")] == [3, 2, 1]  # the sale is in history
