"""Messages and reminders to an event's attendees: the staff page and the JSON API (see docs/messages.md)."""
