"""The stock-import page with pasted counts (issue 11 item 10): errors under the textarea, duplicates refused."""

import re

from inventory import selectors


def errors_under(page: str, field: str) -> list[str]:
    """The error paragraphs rendered inside the given field's block."""
    block = re.search(rf'<div class="field[^"]*">\s*<label for="id_{field}">.*?</div>', page, re.S).group(0)
    return re.findall(r'<p class="field-error"[^>]*>(.*?)</p>', block)


def test_errors_of_pasted_text_appear_under_the_textarea(item, staff_client):
    response = staff_client.post("/inventory/import/", {"csv_text": "TSHIRT-M,25\nGHOST,3", "reason": "count"})
    page = response.content.decode()
    assert response.status_code == 400
    assert errors_under(page, "csv_file") == []
    assert errors_under(page, "csv_text") == ["line 2: there is no inventory item &#x27;GHOST&#x27;"]


def test_duplicate_skus_in_pasted_text_are_refused_like_a_file(item, staff_client):
    for text in ("TSHIRT-M,25\nTSHIRT-M,30", "TSHIRT-M,25\r\nTSHIRT-M ,30\r\n"):
        response = staff_client.post("/inventory/import/", {"csv_text": text, "reason": "count"})
        page = response.content.decode()
        assert response.status_code == 400, text
        assert "already counted on line 1" in page, text
    assert int(selectors.item_get(sku="TSHIRT-M").quantity) == 10


def test_errors_of_an_uploaded_file_stay_under_the_file_field(item, staff_client):
    from django.core.files.uploadedfile import SimpleUploadedFile
    upload = SimpleUploadedFile("count.csv", b"GHOST,3\n", content_type="text/csv")
    page = staff_client.post("/inventory/import/", {"csv_file": upload, "reason": "count"}).content.decode()
    assert errors_under(page, "csv_file") == ["line 1: there is no inventory item &#x27;GHOST&#x27;"]
