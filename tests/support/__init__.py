"""Tooling the tests and benchmarks import, kept out of the app: the capacity model (``python -m
tests.support.capacity_model``), fault injection and the item size. Nothing outside tests/ imports it."""
