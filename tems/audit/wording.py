"""The log's actions, and each entry in the words staff read: "raised the capacity from 40 to 60"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tems.templatetags.when import when_text

# Every action the log records, with the words its filter shows. Apps name their entries by these constants.
EVENT_CREATED = "event_created"
EVENT_EDITED = "event_edited"
EVENT_CANCELLED = "event_cancelled"
EVENT_PUBLISHED = "event_published"
EVENT_SENT_BACK = "event_sent_back"
QUESTIONS_CHANGED = "questions_changed"
MESSAGE_SENT = "message_sent"
CHECKED_IN = "checked_in"
CHECKIN_UNDONE = "checkin_undone"
ATTENDEES_VIEWED = "attendees_viewed"
ATTENDEES_DOWNLOADED = "attendees_downloaded"
ITEM_CREATED = "item_created"
ITEM_EDITED = "item_edited"
ITEM_ADJUSTED = "item_adjusted"
ITEM_COUNTED = "item_counted"
MEMBER_ADDED = "member_added"
MEMBER_ROLE_CHANGED = "member_role_changed"
MEMBER_REMOVED = "member_removed"
DOORS_ASSIGNED = "doors_assigned"
RETENTION_CHANGED = "retention_changed"
APPROVAL_CHANGED = "approval_changed"
ANSWERS_RETENTION_CHANGED = "answers_retention_changed"

ACTIONS: dict[str, str] = {
    EVENT_CREATED: "Created an event",
    EVENT_EDITED: "Changed an event",
    EVENT_CANCELLED: "Cancelled an event",
    EVENT_PUBLISHED: "Published a draft",
    EVENT_SENT_BACK: "Sent a draft back",
    QUESTIONS_CHANGED: "Changed the questions",
    MESSAGE_SENT: "Sent a message",
    CHECKED_IN: "Checked someone in",
    CHECKIN_UNDONE: "Took back a check-in",
    ATTENDEES_VIEWED: "Viewed the attendee list",
    ATTENDEES_DOWNLOADED: "Downloaded the attendee list",
    ITEM_CREATED: "Added a stock item",
    ITEM_EDITED: "Changed a stock item",
    ITEM_ADJUSTED: "Adjusted stock",
    ITEM_COUNTED: "Imported a stock count",
    MEMBER_ADDED: "Added a member",
    MEMBER_ROLE_CHANGED: "Changed a member's role",
    MEMBER_REMOVED: "Removed a member",
    DOORS_ASSIGNED: "Assigned door volunteers",
    RETENTION_CHANGED: "Changed how long the log is kept",
    APPROVAL_CHANGED: "Changed who approves the events",
    ANSWERS_RETENTION_CHANGED: "Changed how long answers are kept",
}

# The actions an event's log can hold (its filter offers these).
EVENT_ACTIONS = frozenset({EVENT_CREATED, EVENT_EDITED, EVENT_CANCELLED, EVENT_PUBLISHED, EVENT_SENT_BACK,
                           QUESTIONS_CHANGED, MESSAGE_SENT, CHECKED_IN, CHECKIN_UNDONE, ATTENDEES_VIEWED,
                           ATTENDEES_DOWNLOADED, ANSWERS_RETENTION_CHANGED})

FIELD_WORDS = {
    "title": "the title", "description": "the description", "location": "the venue", "starts_at": "the start",
    "ends_at": "the end", "capacity": "the capacity", "reminder_hours": "the reminder (hours before)",
    "offer_hours": "the offer window (hours)", "time_zone": "the time zone", "map_url": "the map link",
    "online_url": "the online link", "category": "the category", "organizer": "the organizer",
    "public": "whether it is listed publicly", "registration_opens_at": "when registration opens",
    "registration_closes_at": "when registration closes", "name": "the name", "quantity": "the quantity",
    "role": "the role", "days": "the days kept",
}
AUDIENCE_WORDS = {"confirmed": "everyone confirmed", "waitlisted": "the waiting list",
                  "checked_in": "everyone checked in", "not_checked_in": "everyone not checked in yet"}
ROLE_WORDS = {"team_admin": "team admin", "event_manager": "event manager", "door_volunteer": "door volunteer",
              "inventory_keeper": "inventory keeper", "viewer": "viewer", "platform_admin": "platform admin"}
# A changed long text is said to have changed, not quoted into the log's page.
LONG_TEXT = 80


def _value(value: Any) -> str:
    if value is None or value == "":
        return "(empty)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str) and len(value) >= 19 and value[4:5] == "-" and value[10:11] == "T":
        try:
            return when_text(value)
        except ValueError:
            pass
    if isinstance(value, str):
        return f"“{value}”"
    return str(value)


def _change(name: str, old: Any, new: Any) -> str:
    words = FIELD_WORDS.get(name, name.replace("_", " "))
    if isinstance(old, int | float) and isinstance(new, int | float) and not isinstance(old, bool):
        verb = "raised" if new > old else "lowered"
        return f"{verb} {words} from {old} to {new}"
    if any(isinstance(value, str) and len(value) > LONG_TEXT for value in (old, new)):
        return f"changed {words}"
    return f"changed {words} from {_value(old)} to {_value(new)}"


def changes_text(before: dict | None, after: dict | None) -> str:
    before, after = before or {}, after or {}
    return "; ".join(_change(name, before.get(name), after.get(name)) for name in after)


def _event_edited(entry, names: Callable[[str], str]) -> str:
    return changes_text(entry.before, entry.after) or "saved the event unchanged"


def _message_sent(entry, names: Callable[[str], str]) -> str:
    audience = (entry.after or {}).get("audience")
    return f"sent a message to {AUDIENCE_WORDS.get(audience, 'the registrants')}"


def _checked_in(entry, names: Callable[[str], str]) -> str:
    door = (entry.after or {}).get("door")
    whom = names(entry.subject) if entry.subject else "someone"
    return f"checked {whom} in" + (f" at the door “{door}”" if door else "")


def _item(verb: str) -> Callable[[Any, Callable[[str], str]], str]:
    def describe(entry, names: Callable[[str], str]) -> str:
        changes = changes_text(entry.before, entry.after) if entry.before else ""
        text = f"{verb} the stock item {entry.sku}"
        return f"{text}: {changes}" if changes else text
    return describe


def _member(verb: str) -> Callable[[Any, Callable[[str], str]], str]:
    def describe(entry, names: Callable[[str], str]) -> str:
        whom = names(entry.subject) if entry.subject else "someone"
        role = (entry.after or {}).get("role") or (entry.before or {}).get("role")
        if verb == "changed":
            old, new = (entry.before or {}).get("role"), (entry.after or {}).get("role")
            return f"made {whom} {ROLE_WORDS.get(new, new)} (was {ROLE_WORDS.get(old, old)})"
        return f"{verb} {whom} as {ROLE_WORDS.get(role, role)}" if verb == "added" else f"removed {whom} from the team"
    return describe


def _doors(entry, names: Callable[[str], str]) -> str:
    people = [names(key) for key in (entry.after or {}).get("volunteers", [])]
    return "assigned the door to " + (", ".join(people) if people else "nobody")


def _answers_retention(entry, names: Callable[[str], str]) -> str:
    days = (entry.after or {}).get("days")
    if days is None:
        return "set the answers to be kept until someone erases them"
    return f"set the answers to be erased {days} days after the event"


def _retention(entry, names: Callable[[str], str]) -> str:
    days = (entry.after or {}).get("days")
    return f"set the log to keep entries for {days} days"


def _approval(entry, names: Callable[[str], str]) -> str:
    overseer = (entry.after or {}).get("overseen_by")
    return f"set the events to need approval by {overseer}" if overseer else "set the events to be published at once"


_SENTENCES: dict[str, Callable[[Any, Callable[[str], str]], str]] = {
    EVENT_CREATED: lambda entry, names: "created the event",
    EVENT_EDITED: _event_edited,
    EVENT_CANCELLED: lambda entry, names: "cancelled the event",
    EVENT_PUBLISHED: lambda entry, names: "published the draft: students can see it",
    EVENT_SENT_BACK: lambda entry, names: "sent the draft back to its team",
    APPROVAL_CHANGED: _approval,
    QUESTIONS_CHANGED: lambda entry, names: "changed the registration questions",
    MESSAGE_SENT: _message_sent,
    CHECKED_IN: _checked_in,
    CHECKIN_UNDONE: lambda entry, names: "took back a check-in",
    ATTENDEES_VIEWED: lambda entry, names: "viewed the attendee list",
    ATTENDEES_DOWNLOADED: lambda entry, names: "downloaded the attendee list",
    ITEM_CREATED: _item("added"),
    ITEM_EDITED: _item("changed"),
    ITEM_ADJUSTED: _item("adjusted"),
    ITEM_COUNTED: _item("counted"),
    MEMBER_ADDED: _member("added"),
    MEMBER_ROLE_CHANGED: _member("changed"),
    MEMBER_REMOVED: _member("removed"),
    DOORS_ASSIGNED: _doors,
    RETENTION_CHANGED: _retention,
    ANSWERS_RETENTION_CHANGED: _answers_retention,
}


def describe(entry, names: Callable[[str], str]) -> str:
    """What ``entry`` did, in plain words; ``names`` turns a user key into the name to show."""
    sentence = _SENTENCES.get(entry.action)
    return sentence(entry, names) if sentence else ACTIONS.get(entry.action, entry.action).lower()
