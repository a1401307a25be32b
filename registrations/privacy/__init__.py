"""A person's data: the export of everything TEMS holds about them, their erasure, and the erasure of answers
after an event's retention (see docs/privacy.md)."""
