from datetime import datetime

from pynamodb.attributes import UTCDateTimeAttribute

from tems.errors import DomainError


class RegistrationError(DomainError):
    """The one domain error of the registrations app (events, registrations, waitlist)."""


EVENT_CANCELLED = "event_cancelled"


def event_cancelled_error(cancelled_at: datetime | None) -> RegistrationError:
    """The 409 of any write that would admit someone to (or change the seats of) a cancelled event."""
    when = f" on {cancelled_at:%a %-d %b %Y, %H:%M} UTC" if cancelled_at is not None else ""
    return RegistrationError(
        "conflict", f"This event was cancelled{when}: nobody can register, join the waiting list or be admitted.",
        reason=EVENT_CANCELLED, **({"cancelled_at": cancelled_at.isoformat()} if cancelled_at else {}))


def cancelled_in_image(raw_item: dict | None) -> datetime | None:
    """When the event was cancelled, per a refused write's ALL_OLD image of the event or a seat shard (None: not)."""
    if not raw_item or "cancelled_at" not in raw_item:
        return None
    return UTCDateTimeAttribute().deserialize(raw_item["cancelled_at"]["S"])
