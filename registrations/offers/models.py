"""A seat offered from the waiting list (``Offer``), in the single table (see tems.dynamo)."""

from __future__ import annotations

from datetime import UTC, datetime

from pynamodb.attributes import (
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)

from registrations.models import Registration
from tems.dynamo import CollectionIndex, TableModel


class Offer(TableModel):
    """``USER#<user_id>`` / ``OFFER#<registration_id>``: a seat freed in an event in offer mode, held for the
    head of its waiting list until ``ends_at``, and how the offer ended.

    Written with ``attribute_not_exists`` in the transaction that frees the seat (the seat stays taken and the
    registration becomes OFFERED), so a seat is offered once. Accepting, declining and the expiry are each one
    transaction conditioned on ``state = offered`` here, the accept also on ``ends_at > now`` and the expiry
    on ``ends_at <= now``: of all of them exactly one ends the offer, and a late accept fails by the clock even
    before anything sweeps. While offered it is in GSI1 under ``OFFERS`` by its end (the expiry sweep's
    Query); an ended offer leaves the index and stays as the answer to a late tap until its TTL.
    """

    SK_PREFIX = "OFFER#"
    COLLECTION = "OFFERS"
    # How an offer ends; ``state`` is OFFERED until then.
    ACCEPTED = "accepted"
    DECLINED = "declined"
    EXPIRED = "expired"
    # The event was cancelled while the offer was open: the registration stays offered, as every registration of
    # a cancelled event stays as it was, and nothing is handed on.
    CALLED_OFF = "called_off"
    # An ended offer answers late taps for a month, then DynamoDB's TTL removes it.
    KEEP_ENDED_DAYS = 30

    registration_id = UnicodeAttribute()
    event_id = UnicodeAttribute()
    user_id = UnicodeAttribute()
    state = UnicodeAttribute()
    shard = NumberAttribute()  # the seat shard of the seat held
    offered_at = UTCDateTimeAttribute()
    ends_at = UTCDateTimeAttribute()
    ended_at = UTCDateTimeAttribute(null=True)
    expires_at = TTLAttribute(null=True)

    by_end = CollectionIndex()
    gsi1pk = UnicodeAttribute(attr_name="GSI1PK", null=True)
    gsi1sk = UnicodeAttribute(attr_name="GSI1SK", null=True)

    @classmethod
    def key_for(cls, user_id: str, registration_id: str) -> tuple[str, str]:
        return Registration.user_pk_for(user_id), cls.SK_PREFIX + registration_id

    @staticmethod
    def listing_key(ends_at: datetime, registration_id: str) -> str:
        # Fixed-width UTC, so string order is time order and the sweep asks for "ended by now" as a key range.
        return f"{ends_at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#{registration_id}"
