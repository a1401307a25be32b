"""The report's counters of an event (``EventReportDay``), in the single table (see tems.dynamo)."""

from __future__ import annotations

from datetime import datetime

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from registrations.offers.models import Offer
from tems.dynamo import TableModel

# The report items of an event are spread over one partition per seat shard (or waiting-list lane) the counted
# transaction already writes: transactions that already meet on a shard meet on its report item too, and on no
# other (docs/reports.md, "Where"). So there are as many slots as an event can have shards
# (registrations.seating.shards.MAX_SHARDS): fewer, and the shards sharing a slot would queue on its item.
REPORT_SLOTS = 200

# How long an accepted offer took, in minutes: the upper bound of each bucket of the histogram the median is read
# from. Finer where most answers fall (the first hours), coarser towards the longest window (two weeks); the
# median is known to within its bucket, so these bounds are its precision.
ACCEPT_BUCKET_MINUTES = (15, 30, 60, 120, 240, 360, 480, 720, 1080, 1440, 2160, 2880, 4320, 10080, 20160)


def accept_bucket(minutes: float) -> int:
    """The histogram bucket of an accept that took ``minutes``: the first whose bound is not below it."""
    for index, bound in enumerate(ACCEPT_BUCKET_MINUTES):
        if minutes <= bound:
            return index
    return len(ACCEPT_BUCKET_MINUTES) - 1  # a window never exceeds the last bound; kept for a clock's skew


def accept_attribute(bucket: int) -> str:
    return f"accepted_within_{bucket:02d}"


def accepted_within(minutes: float) -> str:
    """The histogram counter an accept that took ``minutes`` is counted in."""
    return accept_attribute(accept_bucket(minutes))


# The histogram's counters, bucket by bucket.
ACCEPT_HISTOGRAM = tuple(accept_attribute(bucket) for bucket in range(len(ACCEPT_BUCKET_MINUTES)))


# The counters of a day item, as the report and its CSV name them.
REGISTRATIONS = "registrations"  # registrations made that day that still stand (a cancel takes its own back)
WAITING_JOINED = "waiting_joined"
WAITING_LEFT = "waiting_left"
OFFERS_MADE = "offers_made"
OFFERS_ACCEPTED = "offers_accepted"
OFFERS_DECLINED = "offers_declined"
OFFERS_EXPIRED = "offers_expired"
COUNTERS = (REGISTRATIONS, WAITING_JOINED, WAITING_LEFT, OFFERS_MADE, OFFERS_ACCEPTED, OFFERS_DECLINED,
            OFFERS_EXPIRED)
# The counter of each way an offer ends, by the Offer's state: one called off with its event is counted only as made.
OFFER_ENDS = {Offer.ACCEPTED: OFFERS_ACCEPTED, Offer.DECLINED: OFFERS_DECLINED, Offer.EXPIRED: OFFERS_EXPIRED}


class EventReportDay(TableModel):
    """``EVENTREPORT#<event_id>#<slot>`` / ``DAY#<yyyy-mm-dd>``: what the transactions of one UTC day counted
    for the event in one of its REPORT_SLOTS. Written only by ADD (``registrations.reports.counting``), inside
    the transaction of the change it counts; the report sums the slots.

    ``registrations`` is counted on the day a registration was made (+1 when made, -1 when it is cancelled,
    declined or handed on), so each day says how many of that day's registrations still stand. The others are
    counted on the day they happen."""

    SK_PREFIX = "DAY#"

    event_id = UnicodeAttribute(null=True)
    day = UnicodeAttribute(null=True)
    registrations = NumberAttribute(null=True)
    waiting_joined = NumberAttribute(null=True)
    waiting_left = NumberAttribute(null=True)
    offers_made = NumberAttribute(null=True)
    offers_accepted = NumberAttribute(null=True)
    offers_declined = NumberAttribute(null=True)
    offers_expired = NumberAttribute(null=True)
    accepted_within_00 = NumberAttribute(null=True)
    accepted_within_01 = NumberAttribute(null=True)
    accepted_within_02 = NumberAttribute(null=True)
    accepted_within_03 = NumberAttribute(null=True)
    accepted_within_04 = NumberAttribute(null=True)
    accepted_within_05 = NumberAttribute(null=True)
    accepted_within_06 = NumberAttribute(null=True)
    accepted_within_07 = NumberAttribute(null=True)
    accepted_within_08 = NumberAttribute(null=True)
    accepted_within_09 = NumberAttribute(null=True)
    accepted_within_10 = NumberAttribute(null=True)
    accepted_within_11 = NumberAttribute(null=True)
    accepted_within_12 = NumberAttribute(null=True)
    accepted_within_13 = NumberAttribute(null=True)
    accepted_within_14 = NumberAttribute(null=True)

    PK_PREFIX = "EVENTREPORT#"

    @staticmethod
    def slot_for(shard: int) -> int:
        return int(shard) % REPORT_SLOTS

    @classmethod
    def pk_for(cls, event_id: str, slot: int) -> str:
        return f"{cls.PK_PREFIX}{event_id}#{slot}"

    @staticmethod
    def day_of(when: datetime) -> str:
        return when.date().isoformat()

    @classmethod
    def key_for(cls, event_id: str, *, shard: int, when: datetime) -> tuple[str, str]:
        return cls.pk_for(event_id, cls.slot_for(shard)), cls.SK_PREFIX + cls.day_of(when)


assert len(ACCEPT_BUCKET_MINUTES) == sum(1 for name in vars(EventReportDay) if name.startswith("accepted_within_"))
