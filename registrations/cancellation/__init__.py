"""Calling an event off: the staff page and the JSON API (see docs/cancellation.md)."""
