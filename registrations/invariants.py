"""What must always be true of registrations, checked by ``manage.py check_invariants`` (and after every race
test). Each check reads one consistent scan; a message names the items involved."""

from collections import defaultdict
from collections.abc import Iterator

from registrations.models import CONFIRMED, WAITLISTED, CheckIn, Registration, WaitlistEntry
from tems.invariants import TableSnapshot, invariant

LIVE_STATUSES = {CONFIRMED, WAITLISTED}


def _event_registrations(snapshot: TableSnapshot, event_pk: str) -> list[dict]:
    return [item for item in snapshot.with_sk_prefix(event_pk, Registration.SK_PREFIX) if item.get("status") in LIVE_STATUSES]


@invariant("event counters match their registration items")
def event_counters_match(snapshot: TableSnapshot) -> Iterator[str]:
    for event in snapshot.of_entity("Event"):
        registrations = _event_registrations(snapshot, event["PK"])
        confirmed = sum(1 for item in registrations if item.get("status") == CONFIRMED)
        waitlisted = sum(1 for item in registrations if item.get("status") == WAITLISTED)
        if event.get("registered_count", 0) != confirmed:
            yield f"{event['PK']}: registered_count={event.get('registered_count')} but {confirmed} confirmed"
        if event.get("waitlist_count", 0) != waitlisted:
            yield f"{event['PK']}: waitlist_count={event.get('waitlist_count')} but {waitlisted} waitlisted"


@invariant("events never exceed capacity")
def events_within_capacity(snapshot: TableSnapshot) -> Iterator[str]:
    for event in snapshot.of_entity("Event"):
        if event.get("registered_count", 0) > event["capacity"]:
            yield f"{event['PK']}: {event['registered_count']} registered over capacity {event['capacity']}"


@invariant("every claim has both registration items and every registration its claim")
def claims_match_registrations(snapshot: TableSnapshot) -> Iterator[str]:
    claims = {(item["event_id"], item["user_id"]): item for item in snapshot.of_entity("RegistrationClaim")}
    registrations = snapshot.of_entity("Registration")
    event_side = {item["registration_id"]: item for item in registrations if Registration.is_event_side(item["PK"])}
    user_side = {item["registration_id"]: item for item in registrations if Registration.is_user_side(item["PK"])}
    for (event_id, user_id), claim in claims.items():
        registration_id = claim["registration_id"]
        for side, items in (("event", event_side), ("user", user_side)):
            item = items.get(registration_id)
            if item is None:
                yield f"claim {claim['PK']}/{claim['SK']}: no {side}-side registration {registration_id}"
            elif item.get("status") != claim.get("status"):
                yield (f"claim {claim['PK']}/{claim['SK']} says {claim.get('status')} but the {side}-side "
                       f"registration {registration_id} says {item.get('status')}")
    for side, items in (("event", event_side), ("user", user_side)):
        for registration_id, item in items.items():
            claim = claims.get((item["event_id"], item["user_id"]))
            if claim is None or claim["registration_id"] != registration_id:
                yield f"{side}-side registration {item['PK']}/{item['SK']} has no claim naming it"
    for registration_id in event_side.keys() ^ user_side.keys():
        yield f"registration {registration_id} is stored on one side only"


@invariant("nobody waits while a seat is free")
def nobody_waits_for_a_free_seat(snapshot: TableSnapshot) -> Iterator[str]:
    for event in snapshot.of_entity("Event"):
        waiting = len(snapshot.with_sk_prefix(event["PK"], WaitlistEntry.SK_PREFIX))
        free = event["capacity"] - event.get("registered_count", 0)
        if waiting and free > 0:
            yield f"{event['PK']}: {waiting} waiting while {free} seat(s) free"


@invariant("waitlist entries are unique and in ticket order")
def waitlist_in_order(snapshot: TableSnapshot) -> Iterator[str]:
    waiting = {item["registration_id"]: item for item in snapshot.of_entity("Registration")
               if Registration.is_event_side(item["PK"]) and item.get("status") == WAITLISTED}
    entries_by_event: dict[str, list[dict]] = defaultdict(list)
    for entry in snapshot.of_entity("WaitlistEntry"):
        entries_by_event[entry["PK"]].append(entry)
    seen_registrations = set()
    for event in snapshot.of_entity("Event"):
        entries = sorted(entries_by_event.get(event["PK"], []), key=lambda e: e["SK"])
        tickets = [int(entry["ticket"]) for entry in entries]
        if len(set(tickets)) != len(tickets):
            yield f"{event['PK']}: duplicate waitlist tickets {tickets}"
        if tickets != sorted(tickets):
            yield f"{event['PK']}: waitlist keys out of ticket order {tickets}"
        if tickets and max(tickets) > event.get("waitlist_seq", 0):
            yield f"{event['PK']}: ticket {max(tickets)} beyond waitlist_seq={event.get('waitlist_seq', 0)}"
        for entry in entries:
            registration = waiting.get(entry["registration_id"])
            seen_registrations.add(entry["registration_id"])
            if registration is None:
                yield f"{entry['PK']}/{entry['SK']}: no waitlisted registration {entry['registration_id']}"
            elif int(registration.get("ticket", -1)) != int(entry["ticket"]):
                yield f"{entry['PK']}/{entry['SK']}: registration {entry['registration_id']} holds ticket {registration.get('ticket')}"
    for registration_id, registration in waiting.items():
        if registration_id not in seen_registrations:
            yield f"waitlisted registration {registration['PK']}/{registration['SK']} has no waitlist entry"


@invariant("each event's checked-in count matches its check-ins")
def checkins_match(snapshot: TableSnapshot) -> Iterator[str]:
    for event in snapshot.of_entity("Event"):
        checkins = snapshot.with_sk_prefix(event["PK"], CheckIn.SK_PREFIX)
        if int(event.get("checked_in_count", 0)) != len(checkins):
            yield f"{event['PK']}: checked_in_count={event.get('checked_in_count', 0)} but {len(checkins)} check-ins"
