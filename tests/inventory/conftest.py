import pytest

from inventory import services


@pytest.fixture
def item(ddb):
    """A stock of 10 T-shirts at version 1 (its creating history entry is CHANGE#1)."""
    return services.item_create(sku="TSHIRT-M", name="T-shirt (M)", description="Navy, logo front", quantity=10,
                                location="Store room A", actor="ana")


class FakeTime:
    """Injected into RetryPolicy: records each backoff instead of sleeping, and jitters deterministically."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.caps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def uniform(self, low: float, high: float) -> float:
        self.caps.append(high)
        return high / 2


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()
