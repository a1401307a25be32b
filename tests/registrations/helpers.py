"""Shared helpers of the registration tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from lab.techniques.registration import registration_fingerprint
from registrations import selectors, services
from registrations.models import WAITLISTED, EventSeats, Registration, RegistrationClaim, SeatShard, WaitlistEntry
from registrations.seating import shards
from registrations.services import registration as registration_service

STARTS = datetime(2027, 5, 1, 9, 0, tzinfo=UTC)


def new_key() -> str:
    return str(uuid.uuid4())


def make_event(capacity: int = 5, **overrides):
    fields = {"title": "Open day", "starts_at": STARTS, "capacity": capacity, "created_by": "staff"}
    return services.event_create(**{**fields, **overrides})


def register(event_id: str, user_id: str, key: str | None = None, **kwargs):
    return services.registration_create(
        event_id=event_id, user_id=user_id, idempotency_key=key or new_key(),
        fingerprint=registration_fingerprint(event_id=event_id, user_id=user_id), **kwargs,
    )


def spaced_clock(*, start: datetime | None = None) -> Callable[[], datetime]:
    """A clock for joins that must take their tickets in the order they are made, one block each: every call is
    two seconds after the last (past ``BLOCK_SECONDS``, so no lane hands a later joiner a ticket of an older
    block), starting five minutes ago, so the requests after them run on the real clock."""
    moments = iter(range(10**6))
    base = start or (datetime.now(UTC) - timedelta(minutes=5))
    return lambda: base + timedelta(seconds=2 * next(moments))


def _kept(item) -> dict:
    keys = {"pk", "sk", "gsi1pk", "gsi1sk", "entity"}  # entity: a carried waitlist entry reads as a Registration
    return {name: value for name, value in item.attribute_values.items() if name not in keys}


def into_legacy_layout(event_id: str) -> None:
    """Store the event as TEMS did before issue 13 moved registrations off the event's partition: each claim at
    ``EVENT#<e>/REGCLAIM#<user>``, each event-side copy at ``EVENT#<e>/REGISTRATION#<id>`` indexed under the one
    ``ATTENDEES#<e>``, and no ``layout`` on the event, its shards or the user-side copies."""
    for copy in list(selectors.event_registrations(event_id=event_id)):
        claim = RegistrationClaim.get(*RegistrationClaim.key_for(event_id, copy.user_id), consistent_read=True)
        RegistrationClaim(*RegistrationClaim.legacy_key_for(event_id, copy.user_id), **_kept(claim)).save()
        claim.delete()
        name = copy.user_name or copy.user_id
        Registration(*Registration.legacy_event_key_for(event_id, copy.registration_id), **_kept(copy),
                     gsi1pk=Registration.legacy_attendees_pk_for(event_id),
                     gsi1sk=Registration.attendee_sk_for(name, copy.registration_id)).save()
        if copy.sk.startswith(WaitlistEntry.SK_PREFIX):
            # A waitlist entry that is the copy: entries of that time carried no registration.
            WaitlistEntry(copy.pk, copy.sk).update(actions=[
                WaitlistEntry.user_name.remove(), WaitlistEntry.status.remove(), WaitlistEntry.created_at.remove(),
                WaitlistEntry.gsi1pk.remove(), WaitlistEntry.gsi1sk.remove()])
        else:
            copy.delete()
        Registration(*Registration.user_key_for(copy.user_id, copy.registration_id)).update(
            actions=[Registration.layout.remove()])
    event = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
    event.update(actions=[EventSeats.layout.remove()])
    for shard in shards.shards_get(event_id=event_id, count=int(event.seat_shards)):
        shard.update(actions=[SeatShard.layout.remove()])


def seat_taken_under(monkeypatch, condition) -> None:
    """A deliberately broken confirmed registration: its seat is taken under ``condition(attempt)`` instead of
    the service's own (each broken variant drops the one clause its test must show is needed)."""
    original = registration_service.confirm_transaction
    seat = services.common.SEAT

    def broken(attempt, shard):
        transaction, response = original(attempt, shard)
        transaction._ops["update"] = [(label, apply) for label, apply in transaction._ops["update"] if label != seat]
        transaction._labels.discard(seat)
        transaction.update(seat, SeatShard(*SeatShard.key_for(attempt.event_id, shard)),
                           actions=[SeatShard.taken.add(1)], condition=condition(attempt),
                           return_old_on_failure=True)
        return transaction, response

    monkeypatch.setattr(registration_service, "confirm_transaction", broken)


def as_before_entries_carried_it(entry: WaitlistEntry) -> None:
    """Store a waiting registration as joins wrote it before: a waitlisted event-side copy, and a bare entry."""
    Registration(*Registration.event_key_for(entry.event_id, entry.registration_id),
                 registration_id=entry.registration_id, event_id=entry.event_id, user_id=entry.user_id,
                 user_name=entry.user_name, status=WAITLISTED, created_at=entry.created_at, ticket=entry.ticket,
                 lane=entry.lane, gsi1pk=entry.gsi1pk, gsi1sk=entry.gsi1sk).save()
    entry.update(actions=[WaitlistEntry.user_name.remove(), WaitlistEntry.status.remove(),
                          WaitlistEntry.created_at.remove(), WaitlistEntry.gsi1pk.remove(),
                          WaitlistEntry.gsi1sk.remove()])


def as_before_the_lanes(entry: WaitlistEntry) -> None:
    """Store a waiting registration as joins wrote it before the lanes (and before entries carried it): a bare
    entry in the event's own partition, counted on the event's ``waitlist_count``, and no lane anywhere."""
    as_before_entries_carried_it(entry)
    event_id, ticket = entry.event_id, int(entry.ticket)
    bare = WaitlistEntry.get(entry.pk, entry.sk, consistent_read=True)
    WaitlistEntry(*WaitlistEntry.legacy_key_for(event_id, ticket), **{
        name: value for name, value in bare.attribute_values.items() if name not in ("pk", "sk", "lane")}).save()
    bare.delete()
    SeatShard(*SeatShard.key_for(event_id, int(entry.lane))).update(actions=[SeatShard.waiting.add(-1)])
    EventSeats(*EventSeats.key_for(event_id)).update(actions=[EventSeats.waitlist_count.add(1)])
    for item in (RegistrationClaim(*RegistrationClaim.key_for(event_id, entry.user_id)),
                 Registration(*Registration.user_key_for(entry.user_id, entry.registration_id)),
                 Registration(*Registration.event_key_for(event_id, entry.registration_id))):
        item.update(actions=[type(item).lane.remove()])


def as_confirmed_before_the_shards(event_id: str, user_id: str) -> None:
    """Store a confirmed registration as it was before the shards: its claim and copies name no shard."""
    claim = RegistrationClaim.get(*RegistrationClaim.key_for(event_id, user_id), consistent_read=True)
    for item in (claim, Registration(*Registration.user_key_for(user_id, claim.registration_id)),
                 Registration(*Registration.event_key_for(event_id, claim.registration_id))):
        item.update(actions=[type(item).shard.remove()])
