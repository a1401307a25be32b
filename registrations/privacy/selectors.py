"""Reads of a person's data: everything TEMS holds about them, found by the keys it is stored under.

Nothing here names an attribute it exports: every item is read whole, so an attribute or an item kind added later
(answers on a registration, an offer in the student's partition) reaches the export without a change here (the
export document, one readable entry per registration, is ``registrations.serializers.personal_data_to_dict``).
What is named is where a person's items live: their own partition (``USER#<key>``), the write-rate counters
(``WRITERATE#<key>``), and for each of their registrations the keys its other items are built from (the event's
copy, the waitlist entry, the check-in and the door's log of it), plus the staff messages and reminders the
event's fan-out sent them. The read is paged through to the end of each partition.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from registrations.checkins.models import CheckIn, CheckInLogEntry
from registrations.events.models import Event
from registrations.messages.models import EventMessage
from registrations.models import CONFIRMED, WAITLISTED, Registration, RegistrationClaim, WaitlistEntry
from registrations.privacy.models import EventRetention
from tems.ratelimit import WriteRateCounter

# A BatchGetItem takes at most 100 keys.
BATCH_KEYS = 100

_deserializer = TypeDeserializer()

Item = dict[str, Any]


def item_from_raw(raw: dict[str, Any]) -> Item:
    """An item as DynamoDB sent it (typed values), as Python values."""
    return {name: _deserializer.deserialize(value) for name, value in raw.items()}


def partition_items(pk: str, *, sk_prefix: str | None = None, filter_condition=None) -> Iterator[Item]:
    """Every item of partition ``pk`` (under ``sk_prefix``), page after page, as stored (strongly consistent)."""
    results = Registration.query(pk, Registration.sk.startswith(sk_prefix) if sk_prefix else None,
                                 filter_condition=filter_condition, consistent_read=True)
    for page in results.page_iter:
        for raw in page.get("Items", []):
            yield item_from_raw(raw)


def items_by_key(keys: Iterable[tuple[str, str]]) -> list[Item]:
    """The items stored under ``keys`` (missing ones left out), as stored, in BatchGetItems of 100."""
    wanted = sorted(set(keys))
    found: list[Item] = []
    while wanted:
        page, wanted = wanted[:BATCH_KEYS], wanted[BATCH_KEYS:]
        request = [{"PK": {"S": pk}, "SK": {"S": sk}} for pk, sk in page]
        while request:
            items, unprocessed = Registration._batch_get_page(request, consistent_read=True, attributes_to_get=None)
            found += [item_from_raw(raw) for raw in items or ()]
            request = unprocessed or []
    return found


def write_rate_pk(user_id: str) -> str:
    """The partition of the person's write-rate counters (tems.ratelimit): its key helper, any window."""
    return WriteRateCounter.key_for(user_id, 0)[0]


def is_registration(item: Item) -> bool:
    return item.get("entity") == "Registration" and str(item.get("SK", "")).startswith(Registration.SK_PREFIX)


def user_registrations(*, user_id: str) -> list[Item]:
    """The user-side copies of the person's registrations, as stored."""
    return [item for item in partition_items(Registration.user_pk_for(user_id), sk_prefix=Registration.SK_PREFIX)
            if is_registration(item)]


def registration_copy_keys(registration: Item) -> list[tuple[str, str]]:
    """Where a registration's other items may be, from its user-side copy: the event's copy and the claim, the
    waitlist entry of a ticket, the check-in."""
    event_id, registration_id = registration["event_id"], registration["registration_id"]
    user_id = registration["user_id"]
    keys = [RegistrationClaim.key_for(event_id, user_id), Registration.event_key_for(event_id, registration_id),
            CheckIn.key_for(event_id, registration_id)]
    if registration.get("ticket") is not None:
        keys.append(WaitlistEntry.key_for(event_id, int(registration["ticket"]), int(registration["lane"])))
    return keys


def checkin_log_items(*, event_id: str, registration_ids: set[str]) -> list[Item]:
    """The door's log entries (check-ins and undos) of these registrations of one event."""
    return [item for item in partition_items(Event.pk_for(event_id), sk_prefix=CheckInLogEntry.SK_PREFIX)
            if item.get("registration_id") in registration_ids]


def _addressed_to(message: Item, registrations: list[Item]) -> bool:
    # The fan-out mails the registrations made before the message's ``registered_before`` whose status is the
    # audience's (confirmed: also the checked-in and not-checked-in audiences, which are confirmed people).
    before = message.get("registered_before")
    for registration in registrations:
        created = registration.get("created_at")
        if before is None or created is None or created >= before:
            continue
        if message.get("audience") == WAITLISTED or registration.get("status") in (CONFIRMED, WAITLISTED):
            return True
    return False


def event_messages_to(*, event_id: str, registrations: list[Item]) -> list[Item]:
    """The staff messages and reminders of an event whose fan-out included one of these registrations."""
    return [item for item in partition_items(EventMessage.pk_for(event_id), sk_prefix=EventMessage.SK_PREFIX)
            if _addressed_to(item, registrations)]


@dataclass(frozen=True)
class PersonalData:
    """What TEMS holds about one person, as stored: ``items`` (their own partition, their write-rate counters,
    each registration's other copies and door log; an item may come twice), ``mails`` (the staff messages and
    reminders of their events that were sent to them) and ``events`` (the items of those events)."""

    items: list[Item]
    mails: list[Item]
    events: list[Item]


def personal_data_read(*, user_id: str) -> PersonalData:
    """Everything TEMS holds about the person with key ``user_id``, each item read whole
    (registrations.serializers.personal_data_to_dict makes the export document of it)."""
    own = list(partition_items(Registration.user_pk_for(user_id)))
    own += partition_items(write_rate_pk(user_id))
    registrations = [item for item in own if is_registration(item)]
    derived = items_by_key(key for registration in registrations for key in registration_copy_keys(registration))
    by_event: dict[str, list[Item]] = defaultdict(list)
    for registration in registrations:
        by_event[registration["event_id"]].append(registration)
    door_log: list[Item] = []
    mails: list[Item] = []
    for event_id, of_event in sorted(by_event.items()):
        door_log += checkin_log_items(event_id=event_id, registration_ids={r["registration_id"] for r in of_event})
        mails += event_messages_to(event_id=event_id, registrations=of_event)
    events = items_by_key(Event.key_for(event_id) for event_id in by_event)
    return PersonalData(items=[*own, *derived, *door_log], mails=mails, events=events)


def retention_get(*, event_id: str) -> EventRetention | None:
    """The event's answer retention, or None (answers kept until someone erases them)."""
    try:
        return EventRetention.get(*EventRetention.key_for(event_id), consistent_read=True)
    except EventRetention.DoesNotExist:
        return None
