"""Shared helpers of the registration tests."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from lab.techniques.registration import registration_fingerprint
from registrations import selectors, services
from registrations.models import EventSeats, Registration, RegistrationClaim, SeatShard, WaitlistEntry
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
