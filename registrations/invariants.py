from collections.abc import Iterator

from tems.invariants import TableSnapshot, invariant


@invariant("event counters match their registration items")
def event_counters_match(snapshot: TableSnapshot) -> Iterator[str]:
    for event in snapshot.of_entity("Event"):
        registrations = snapshot.with_sk_prefix(event["PK"], "REGISTRATION#")
        confirmed = sum(1 for item in registrations if item.get("status") == "confirmed")
        waitlisted = sum(1 for item in registrations if item.get("status") == "waitlisted")
        if event.get("registered_count", 0) != confirmed:
            yield f"{event['PK']}: registered_count={event.get('registered_count')} but {confirmed} confirmed"
        if event.get("waitlist_count", 0) != waitlisted:
            yield f"{event['PK']}: waitlist_count={event.get('waitlist_count')} but {waitlisted} waitlisted"


@invariant("events never exceed capacity")
def events_within_capacity(snapshot: TableSnapshot) -> Iterator[str]:
    for event in snapshot.of_entity("Event"):
        if event.get("registered_count", 0) > event["capacity"]:
            yield f"{event['PK']}: {event['registered_count']} registered over capacity {event['capacity']}"


