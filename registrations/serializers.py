"""The answers of the registrations app, built in one place: the API's bodies, the answers a write stores with
its idempotency record (replayed byte for byte, so a stored answer is never rebuilt from these), and a person's
data export. Views, services and selectors hand stored items here and get the dict an answer is made of; nothing
here reads or writes the table.
"""

from __future__ import annotations

import base64
import functools
import io
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import segno
from boto3.dynamodb.types import Binary
from django.conf import settings
from django.urls import reverse

from registrations.calendar import event_ends
from registrations.events.models import Event
from registrations.messages.models import EventMessage
from registrations.models import OFFERED, Registration, RegistrationClaim
from registrations.questions.question_sets import answers_of
from registrations.seating.shards import SeatCounts
from registrations.statuses import Standing, registration_standing
from registrations.ticket_tokens import short_code, ticket_token, ticket_url
from tems.identity import user_for_key
from tems.ids import id_path

# --- events ---------------------------------------------------------------------------------------------------


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def event_to_dict(event: Event, *, seats: SeatCounts, with_online_url: bool = True,
                  team_name: str | None = None) -> dict:
    """The API's event, with its seats as ``seat_counts`` read them (the stored event holds no count); the online
    link only ``with_online_url`` (staff: people see it on the event's page once their place is confirmed);
    ``team`` is its organizing team, ``team_name`` that team's name (the caller reads it, from Django's database:
    tems.teams.selectors.team_names)."""
    return {
        "id": event.event_id,
        "title": event.title,
        "description": event.description,
        "location": event.location,
        "starts_at": event.starts_at.isoformat(),
        "capacity": int(event.capacity),
        "registered_count": seats.registered,
        "waitlist_count": seats.waiting,
        "reminder_hours": event.reminder_hours_or_default,
        "offer_hours": int(event.offer_hours or 0),
        "version": int(event.version),
        "cancelled_at": event.cancelled_at.isoformat() if event.cancelled_at else None,
        "ends_at": _iso(event.ends_at),
        "time_zone": event.time_zone or settings.TIME_ZONE,
        "map_url": event.map_url or "",
        **({"online_url": event.online_url or ""} if with_online_url else {}),
        "online": bool(event.online_url),
        "category": event.category or "",
        # One organizer on every event: its team's name, or the name typed for an event without a team.
        "organizer": team_name or event.organizer or "",
        "status": "draft" if event.is_draft else "published",
        "public": bool(event.public),
        "registration_opens_at": _iso(event.registration_opens_at),
        "registration_closes_at": _iso(event.registration_closes_at),
        "team": {"id": event.team, "name": team_name} if event.team else None,
    }


def publication_to_dict(*, event_id: str, published_at: datetime, published_by: str) -> dict:
    """A draft's publication, as the approver's tap answers it (and replays it)."""
    return {"event_id": event_id, "status": "published", "published_at": published_at.isoformat(),
            "published_by": published_by}


def cancellation_to_dict(*, event_id: str, cancelled_at: datetime, cancelled_by: str,
                         reason: str | None) -> dict[str, Any]:
    message_id = EventMessage.cancellation_id_for(event_id)
    return {"event_id": event_id, "status": "cancelled", "cancelled_at": cancelled_at.isoformat(),
            "cancelled_by": cancelled_by, "reason": reason or None,
            "notice": message_api_location(event_id, message_id)}


def retention_to_dict(event_id: str, retention) -> dict:
    return {"event_id": event_id, "days": int(retention.days) if retention else None,
            "due_at": retention.due_at.isoformat() if retention else None,
            "done_at": retention.done_at.isoformat() if retention and retention.done_at else None,
            "version": int(retention.version) if retention else None}


# --- registrations ------------------------------------------------------------------------------------------

# Drawing a QR code is pure Python (segno), costly next to the rest of a request; a ticket's drawing never
# changes, so each process keeps the last ones it drew.
QR_CACHE_SIZE = 1024


@functools.lru_cache(maxsize=QR_CACHE_SIZE)
def registration_qr_svg(*, ticket_url: str) -> str:
    """An SVG QR code of the registration's ticket URL (deterministic: same ticket, same drawing), fit both to
    be inlined in a page and to be served on its own as ``image/svg+xml``."""
    code = segno.make(ticket_url, error="m")
    drawing = io.BytesIO()
    # svgns: a standalone SVG image without its namespace is not drawn by browsers (segno's svg_inline omits it).
    code.save(drawing, kind="svg", xmldecl=False, svgns=True, nl=False, scale=4, omitsize=True,
              title="Ticket QR code", svgclass="qr")
    return drawing.getvalue().decode()


def registration_qr_url(*, registration_id: str) -> str:
    """Where the owner's browser (or API client) fetches the ticket's QR code, drawn on read and cacheable."""
    return id_path("registrations:registration_qr", registration_id=registration_id)


def registration_to_dict(*, registration_id: str, event_id: str, user_id: str, status: str,
                         position: int | None, created_at: datetime, user_name: str | None = None,
                         position_is_bound: bool = False) -> dict[str, Any]:
    """The API's representation of a registration (also what the idempotency record stores and replays).

    ``user`` shows the display name; the immutable ``user_id`` stays internal (synthetic lab and bench students
    have no name, and show their id). ``ticket_url`` is signed from the registration's stable facts only, so a
    replay shows the same ticket. The QR code is not in it: ``qr_url`` draws it on read (the stored answer of a
    write holds only what must be durable; see docs/registrations.md), and reads add ``qr_svg`` with
    ``with_qr_svg``.

    ``position_is_bound``: a join's own answer counts its place as of its lane's block, so tickets other lanes
    have not handed out yet count as people ahead; that number is an upper bound and is named
    ``position_at_most``. Every read's ``position`` is exact.
    """
    return {
        "registration_id": registration_id,
        "event_id": event_id,
        "user": user_name or user_id,
        "status": status,
        ("position_at_most" if position_is_bound else "position"): position,
        "ticket_url": ticket_url(event_id=event_id, registration_id=registration_id, user_id=user_id),
        "qr_url": registration_qr_url(registration_id=registration_id),
        "created_at": created_at.isoformat(),
    }


def stored_registration_to_dict(registration: Registration | RegistrationClaim,
                                position: int | None) -> dict[str, Any]:
    """``registration_to_dict`` of a stored registration, with the waitlist position its reader counted."""
    return registration_to_dict(
        registration_id=registration.registration_id, event_id=registration.event_id,
        user_id=registration.user_id, status=registration.status, position=position,
        created_at=registration.created_at, user_name=registration.user_name,
    )


def my_registration_to_dict(registration: Registration, position: int | None, event: Event | None, *,
                            checked_in: bool = False) -> dict[str, Any]:
    """A row of the student's own list: the registration with its event's title and start (the event may be
    gone: its id stands for the title), what the student is told of it (``standing``,
    statuses.registration_standing), the answers they gave and, for an offered seat, the offer."""
    offer = offer_fields(registration, starts_at=event.starts_at if event else None)
    standing = registration_standing(
        status=registration.status, event=event, position=position,
        offer_ends=datetime.fromisoformat(offer["offer"]["ends_at"]) if offer else None, checked_in=checked_in)
    return {
        **stored_registration_to_dict(registration, position),
        "event_title": event.title if event else registration.event_id,
        "event_starts_at": event.starts_at.isoformat() if event else None,
        "event_ends_at": event_ends(event).isoformat() if event else None,
        "event_location": event.location if event else "",
        "event_cancelled": bool(event and event.is_cancelled),
        "standing": standing_to_dict(standing),
        "answers": answers_of(registration.answers),
        **offer,
    }


def standing_to_dict(standing: Standing) -> dict[str, Any]:
    """What the student is told of a registration, as the API says it (the pages say the same words)."""
    return {"kind": standing.kind, "label": standing.label, "detail": standing.detail,
            "shows_ticket": standing.shows_ticket, "can_cancel": standing.can_cancel,
            "offers_calendar": standing.offers_calendar, "calendar_status": standing.calendar_status}


def with_qr_svg(registration: dict[str, Any]) -> dict[str, Any]:
    """``registration`` (a read's dict) with ``qr_svg``, the ticket's QR code drawn inline, for API reads."""
    return {**registration, "qr_svg": registration_qr_svg(ticket_url=registration["ticket_url"])}


def offer_ends(*, ends_at: datetime, starts_at: datetime | None) -> datetime:
    """When an offer ends, as a person should read it: its window, cut at the event's start (an offer made before
    the start was moved earlier ends at the new start, as the accept's condition holds)."""
    return ends_at if starts_at is None else min(ends_at, starts_at)


def offer_fields(registration: Registration, *, starts_at: datetime | None) -> dict[str, Any]:
    """``{"offer": {...}}`` for an offered registration (its end and where to answer), else nothing: the row's
    shape is unchanged for every other registration."""
    if registration.status != OFFERED or registration.offer_ends_at is None:
        return {}
    offer_id, ends = registration.registration_id, offer_ends(ends_at=registration.offer_ends_at, starts_at=starts_at)
    return {"offer": {
        "offer_id": offer_id, "ends_at": ends.isoformat(),
        "accept_url": id_path("registrations:api_offer_accept", offer_id=offer_id),
        "decline_url": id_path("registrations:api_offer_decline", offer_id=offer_id),
    }}


def attendee_to_dict(registration: Registration | RegistrationClaim, position: int | None,
                     names: tuple[str, str] = ("", ""), checkin: Any = None) -> dict[str, Any]:
    """A row of the staff's attendee list (``position`` for the waitlisted), of its CSV and of the door's list;
    ``names`` is the account's (first, last) name as it is now (empty for an account without one, or gone);
    ``checkin`` the registration's check-in item (``checkins.models.CheckIn``, not imported: the read layer stands
    below the door), if it is checked in."""
    return {
        "registration_id": registration.registration_id,
        "user": registration.user_name or registration.user_id,
        "first_name": names[0],
        "last_name": names[1],
        "status": registration.status,
        "position": position,
        "registered_at": registration.created_at.isoformat(),
        "answers": answers_of(getattr(registration, "answers", None)),
        "checked_in_at": checkin.checked_in_at.isoformat() if checkin else None,
        "checked_in_door": checkin.door if checkin else None,
        "checked_in_by": checkin.checked_in_by if checkin else None,
    }


def door_row_to_dict(row: dict[str, Any], *, event_id: str, user_id: str) -> dict[str, Any]:
    """An attendee row as the door shows and caches it: with the code the student reads out and the signed
    ticket a tap on their name sends, exactly as a scan of their QR code would (one path, one promise)."""
    return {**row, "code": short_code(row["registration_id"]),
            "ticket": ticket_token(event_id=event_id, registration_id=row["registration_id"], user_id=user_id)}


def checkin_to_dict(*, registration_id: str, user_id: str, status: str, checked_in_at: datetime,
                    checked_in_by: str, door: str) -> dict[str, Any]:
    """The API's answer to a scan (also what the scan's idempotency record stores and replays).

    ``user`` is the holder's name for the doorkeeper; the ticket carries only the immutable key, and an account
    that no longer exists (or a synthetic lab student) shows that key.
    """
    holder = user_for_key(user_id)
    return {
        "registration_id": registration_id,
        "user": holder.get_username() if holder else user_id,
        "status": status,
        "checked_in_at": checked_in_at.isoformat(),
        "checked_in_by": checked_in_by,
        "door": door,
    }


# --- messages -------------------------------------------------------------------------------------------------

def message_api_location(event_id: str, message_id: str) -> str:
    return reverse("registrations:api_message_detail", kwargs={"event_id": event_id, "message_id": message_id})


def message_to_dict(message: EventMessage) -> dict[str, Any]:
    return {
        "id": message.message_id,
        "event_id": message.event_id,
        "kind": message.kind,
        "audience": message.audience,
        "subject": message.subject,
        "created_at": message.created_at.isoformat(),
        "created_by": message.created_by,
        "queued": int(message.queued or 0),
        "done": message.done_at is not None,
    }


# --- a person's data ----------------------------------------------------------------------------------------

PERSONAL_DATA_FORMAT = "tems-personal-data/2"

# The item kinds that make up a registration, merged into its one entry of the export.
_REGISTRATION_KINDS = {"Registration", "RegistrationClaim", "WaitlistEntry", "CheckIn", "CheckInLogEntry", "Offer"}
# How the table finds and places an item: said by where each value sits in the export, never exported.
_STORAGE_ATTRIBUTES = {"PK", "SK", "GSI1PK", "GSI1SK", "entity", "shard", "lane", "layout"}


def plain(value: Any) -> Any:
    """A deserialized DynamoDB value as JSON can hold it: numbers as int or float, sets as sorted lists, binary
    as base64."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: plain(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(inner) for inner in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(inner) for inner in value)
    if isinstance(value, Binary):
        return base64.b64encode(value.value).decode()
    return value


def personal_data_to_dict(*, user_id: str, items: list[dict[str, Any]], mails: list[dict[str, Any]],
                          events: list[dict[str, Any]], account: dict[str, Any] | None,
                          exported_at: datetime) -> dict[str, Any]:
    """The export document of a person (registrations.privacy.selectors.personal_data_read gives the items), for
    the person to read: named fields, no storage keys.

    ``registrations`` has one entry per registration, its copies, check-in, door log and offer merged into it,
    with its event (title, start, place) and its answers as question/answer pairs; ``mails`` the staff messages
    and reminders sent to the person's events while they were registered; ``write_requests`` the per-minute
    counts of their taps; ``other`` any other item of their partition, whatever its kind, without its keys;
    ``account`` what Django's database holds (``tems.accounts``).
    """
    by_event = {event["event_id"]: event for event in events}
    parts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    write_requests, other = [], []
    seen: set[tuple[str, str]] = set()
    for item in items:
        if (item["PK"], item["SK"]) in seen:
            continue
        seen.add((item["PK"], item["SK"]))
        if item.get("entity") in _REGISTRATION_KINDS and item.get("registration_id"):
            parts[item["registration_id"]].append(item)
        elif item.get("entity") == "WriteRateCounter":
            minute = int(str(item["SK"]).rpartition("#")[2])
            write_requests.append({"minute": datetime.fromtimestamp(minute * 60, UTC).isoformat(),
                                   "requests": plain(item.get("n", 0))})
        else:
            other.append(_readable(item))
    registrations = [_registration_entry(user_id, its, by_event) for its in parts.values()]
    return {
        "format": PERSONAL_DATA_FORMAT,
        "exported_at": exported_at.isoformat(),
        "user_key": user_id,
        "account": account or {},
        "registrations": sorted(registrations, key=lambda entry: entry["registered_at"] or "", reverse=True),
        "mails": [{**plain({name: mail.get(name) for name in ("event_id", "kind", "audience", "subject", "body")}),
                   "event_title": by_event.get(mail.get("event_id"), {}).get("title"),
                   "sent_at": _stored_iso(mail.get("created_at"))} for mail in mails],
        "write_requests": sorted(write_requests, key=lambda entry: entry["minute"]),
        "other": other,
    }


def _readable(item: dict[str, Any]) -> dict[str, Any]:
    """An item of a kind the export has no entry for, as the person reads it: its kind and its fields."""
    return {"kind": item.get("entity", "unknown"),
            **{name: plain(value) for name, value in sorted(item.items()) if name not in _STORAGE_ATTRIBUTES}}


def _stored_iso(value: Any) -> Any:
    """A stored time (PynamoDB's ``UTCDateTimeAttribute`` text) in ISO 8601, as the API writes times."""
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%f%z").isoformat()
    except (TypeError, ValueError):
        return value


def _export_answers(value: Any) -> list[dict[str, Any]]:
    """Stored answers (``[{id, label, value}]`` as JSON text) as question/answer pairs."""
    return [{"question": answer.get("label") or answer.get("id"), "answer": plain(answer.get("value"))}
            for answer in answers_of(value if isinstance(value, str) else None) if isinstance(answer, dict)]


def _registration_entry(user_id: str, items: list[dict[str, Any]], events: dict[str, dict]) -> dict[str, Any]:
    """One registration's entry: its own copy (the person's) says its status, the others add what they hold."""
    kinds: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        kinds[item["entity"]].append(item)
    copies = kinds["Registration"] + kinds["RegistrationClaim"] + kinds["WaitlistEntry"]
    own = next((item for item in copies if item["PK"] == Registration.user_pk_for(user_id)
                and str(item["SK"]).startswith(Registration.SK_PREFIX)), copies[0] if copies else items[0])
    event_id = own.get("event_id")
    event = events.get(event_id, {})
    answers = next((item["answers"] for item in copies if item.get("answers")), None)
    checkin = kinds["CheckIn"][0] if kinds["CheckIn"] else None
    offer = kinds["Offer"][0] if kinds["Offer"] else None
    return plain({
        "registration_id": own["registration_id"],
        "event": {"id": event_id, "title": event.get("title"), "starts_at": _stored_iso(event.get("starts_at")),
                  "location": event.get("location"), "cancelled_at": _stored_iso(event.get("cancelled_at"))},
        "status": own.get("status"),
        "name_shown": own.get("user_name"),
        "registered_at": _stored_iso(own.get("created_at")),
        "promoted_at": _stored_iso(own.get("promoted_at")),
        "answers": _export_answers(answers),
        "offer": offer and {"state": offer.get("state"),
                            **{name: _stored_iso(offer.get(name)) for name in ("offered_at", "ends_at", "ended_at")}},
        "checked_in": checkin and {"at": _stored_iso(checkin.get("checked_in_at")), "by": checkin.get("checked_in_by"),
                                   "door": checkin.get("door")},
        "door_log": [{"action": entry.get("action"), "at": _stored_iso(entry.get("at")), "by": entry.get("by"),
                      "door": entry.get("door")}
                     for entry in sorted(kinds["CheckInLogEntry"], key=lambda entry: str(entry.get("at")))],
    })
