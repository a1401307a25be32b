import pytest

from registrations.seating.hints import hints
from tems.transactions import LabelledTransaction, TransactionCancelled


@pytest.fixture(autouse=True)
def cold_process():
    """Every test starts as a cold process: no routing hint left by another test (a test that wants a warm one
    teaches it, e.g. ``hints.remember_shards``)."""
    hints.reset()
    yield
    hints.reset()


@pytest.fixture
def cancellations(monkeypatch):
    """Every cancelled transaction's reasons, as {label: code}, in the order they happened."""
    seen: list[dict[str, str]] = []
    original = LabelledTransaction.commit

    def spy(self):
        try:
            return original(self)
        except TransactionCancelled as cancelled:
            seen.append({label: reason.code for label, reason in cancelled.reasons.items()})
            raise

    monkeypatch.setattr(LabelledTransaction, "commit", spy)
    return seen
