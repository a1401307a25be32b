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


def not_found(event_id: str) -> RegistrationError:
    """A registration's refusal of an event that does not exist (or is not published yet, to a student)."""
    return RegistrationError("not_found", f"There is no event with id {event_id!r}.")


def closed_error(starts_at: datetime) -> RegistrationError:
    """Registration ends when the event starts, for the waiting list too."""
    return RegistrationError(
        "conflict", f"Registration closed when the event started ({starts_at:%a %-d %b %Y, %H:%M} UTC): "
                    "nobody can register or join the waiting list any more.",
        reason="registration_closed", starts_at=starts_at.isoformat())


def not_open_error(opens_at: datetime) -> RegistrationError:
    """Staff set when registration opens; the seat's condition refused a tap before it."""
    return RegistrationError(
        "conflict", f"Registration opens on {opens_at:%a %-d %b %Y, %H:%M} UTC: nobody can register or join the "
                    "waiting list before then.", reason="registration_not_open", opens_at=opens_at.isoformat())


def window_closed_error(closes_at: datetime) -> RegistrationError:
    return RegistrationError(
        "conflict", f"Registration closed on {closes_at:%a %-d %b %Y, %H:%M} UTC: nobody can register or join "
                    "the waiting list any more.", reason="registration_closed", closes_at=closes_at.isoformat())
