"""Fixtures of the browser tests (helpers live in tests/browser/helpers.py and pages.py)."""

import pytest


@pytest.fixture
def contexts():
    """Browser contexts a test opens itself (phone and desktop sizes): closed when the test ends."""
    made: list = []
    yield made
    for context in made:
        context.close()
