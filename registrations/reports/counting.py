"""The report's counters, added to the transactions that change what they count (docs/reports.md).

Each helper ADDs to the day item of the seat shard (or lane) the transaction already writes, so a change and
its count commit together or not at all, and a retried or refused round counts nothing. Several changes of one
transaction that count on the same item are merged by ``LabelledTransaction.add_counts``."""

from __future__ import annotations

from datetime import UTC, datetime

from registrations.reports.models import (
    OFFER_ENDS,
    OFFERS_ACCEPTED,
    OFFERS_MADE,
    REGISTRATIONS,
    WAITING_JOINED,
    WAITING_LEFT,
    EventReportDay,
    accepted_within,
)
from tems.transactions import LabelledTransaction

REPORT = "report"


def add_count(transaction: LabelledTransaction, *, event_id: str, shard: int, when: datetime,
              **counts: int) -> None:
    """ADD ``counts`` to the event's report item of ``shard``'s slot and ``when``'s day, in ``transaction``."""
    if not any(counts.values()):
        return
    pk, sk = EventReportDay.key_for(event_id, shard=shard, when=when.astimezone(UTC))
    transaction.add_counts(f"{REPORT}{pk.removeprefix(EventReportDay.PK_PREFIX + event_id)}{sk}",
                           EventReportDay(pk, sk), counts,
                           sets={"event_id": event_id, "day": sk.removeprefix(EventReportDay.SK_PREFIX),
                                 "entity": "EventReportDay"})


def count_registered(transaction: LabelledTransaction, *, event_id: str, shard: int, created_at: datetime,
                     waiting: bool) -> None:
    """A new registration, made at ``created_at``; ``waiting``: it joined the waiting list."""
    add_count(transaction, event_id=event_id, shard=shard, when=created_at,
              **{REGISTRATIONS: 1, WAITING_JOINED: int(waiting)})


def count_gone(transaction: LabelledTransaction, *, event_id: str, shard: int, created_at: datetime,
               now: datetime, was_waiting: bool, offer_end: str | None = None) -> None:
    """A registration made at ``created_at`` is gone at ``now`` (cancelled, or its offer declined or expired as
    ``offer_end``); ``was_waiting``: it left the waiting list with it."""
    add_count(transaction, event_id=event_id, shard=shard, when=created_at, **{REGISTRATIONS: -1})
    counts = {WAITING_LEFT: int(was_waiting)}
    if offer_end in OFFER_ENDS:
        counts[OFFER_ENDS[offer_end]] = 1
    add_count(transaction, event_id=event_id, shard=shard, when=now, **counts)


def count_head_left(transaction: LabelledTransaction, *, event_id: str, shard: int, now: datetime,
                    offered: bool) -> None:
    """The head of the waiting list left it for a seat of ``shard``: offered it, or given it at once."""
    add_count(transaction, event_id=event_id, shard=shard, when=now, **{WAITING_LEFT: 1, OFFERS_MADE: int(offered)})


def count_accepted(transaction: LabelledTransaction, *, event_id: str, shard: int, offered_at: datetime,
                   now: datetime) -> None:
    """An offer made at ``offered_at`` accepted at ``now``: counted, and its time in the histogram."""
    minutes = (now - offered_at).total_seconds() / 60
    add_count(transaction, event_id=event_id, shard=shard, when=now,
              **{OFFERS_ACCEPTED: 1, accepted_within(minutes): 1})
