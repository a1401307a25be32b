"""Events: their pages and JSON API (see docs/registrations.md)."""
