"""Moving an event's registrations into the current layout (issue 13): ``manage.py upgrade_registrations`` at
deploy, and lazily by any write that an event still in the legacy layout refused.

In LEGACY_LAYOUT a registration's claim (``EVENT#<e>`` / ``REGCLAIM#<user>``) and its event-side copy
(``EVENT#<e>`` / ``REGISTRATION#<id>``) sat in the event's own partition; in CURRENT_LAYOUT the claim is under
the student and the copy in one of the event's buckets (registrations.models). A claim left under a key nobody
checks would let its student register a second time, so no registration of an event is ever written under the
current keys while any of its claims may still sit under the legacy ones:

- every write that creates or changes an event's registrations (a seat, a waitlist join, a cancel, a
  promotion, a check-in's admission) carries ``layout = CURRENT_LAYOUT`` in the condition of the event item or
  seat shard it writes anyway, so on an event not yet upgraded it is refused and its ALL_OLD image says why:
  the request upgrades the event (``upgrade_if_legacy``) and tries again;
- the upgrade moves each registration (claim and event-side copy to the current keys, the attendee index key
  into the copy's bucket, the user-side copy marked) in ONE transaction conditioned on the legacy items still
  being what it read, then marks the event and every seat shard current in one transaction conditioned on the
  number of shards read.

So while an event is in the legacy layout nothing but upgrades writes its registrations: concurrent upgrades
meet on the same conditions (one moves a registration, the others' conditions fail and they read again), and
the mark cannot leave a claim behind. A registration that cannot be moved because its student already holds
one under the current key (only a write that skipped the layout condition makes that) is left where it is,
reported, and flagged by ``check_invariants``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from registrations import attendees
from registrations.models import (
    CURRENT_LAYOUT,
    Event,
    EventSeats,
    Registration,
    RegistrationClaim,
    SeatShard,
    layout_of,
)
from registrations.services.common import (
    CLAIM,
    EVENT_REGISTRATION,
    EVENT_SEATS,
    USER_REGISTRATION,
    WRITE_POLICY,
    _busy,
)
from registrations.services.shards import shard_event
from tems.transactions import LabelledTransaction, TransactionCancelled

logger = logging.getLogger(__name__)

LEGACY_CLAIM = "legacy_claim"
LEGACY_EVENT_REGISTRATION = "legacy_event_registration"

# Claims read per BatchGetItem of their two copies (two keys each: PynamoDB sends at most 100 keys a request).
MOVE_BATCH = 50
# A pass that finds claims changed under it (another upgrade moved them; an old process wrote) reads again; an
# event no pass can finish in this many is left for the next run, and the request that needed it is 'busy'.
UPGRADE_MAX_PASSES = 8

# The attributes a moved item keeps: everything but its keys, which the move rebuilds.
_KEY_ATTRIBUTES = frozenset({"pk", "sk", "gsi1pk", "gsi1sk"})


@dataclass
class LayoutUpgrade:
    """What ``layout_upgrade`` did to one event."""

    event_id: str
    moved: int = 0  # registrations this call moved
    marked: bool = False  # this call marked the event current
    # (user id, registration id) of legacy claims whose student already holds a claim under the current key:
    # two registrations of one student, left in place for staff to resolve (check_invariants names them).
    duplicates: list[tuple[str, str]] = field(default_factory=list)


def layout_upgrade(*, event_id: str, sleep: Callable[[float], None] = time.sleep) -> LayoutUpgrade:
    """Move every registration of the event into CURRENT_LAYOUT, then mark the event and its shards current.

    Idempotent, and safe while students register and cancel (they are refused until the mark, and upgrade the
    event themselves): each move is one transaction conditioned on the legacy claim, both copies' statuses as
    read and the current keys being free; the mark is conditioned on the shards read. An event already
    current, or gone, costs one GetItem. Raises RegistrationError('busy') if the event's claims keep changing.
    """
    result = LayoutUpgrade(event_id)
    skipped: set[tuple[str, str]] = set()
    for _ in range(UPGRADE_MAX_PASSES):
        try:
            seats = EventSeats.get(*EventSeats.key_for(event_id), consistent_read=True)
        except EventSeats.DoesNotExist:
            return result
        if layout_of(seats.layout) == CURRENT_LAYOUT:
            return result
        if not seats.seat_shards:
            shard_event(event_id=event_id)  # the mark is written on the shards: an event from before them first
            continue
        if _move_pass(event_id, result, skipped, sleep):
            continue  # claims changed under this pass: read the partition again
        if _mark(event_id, shards=int(seats.seat_shards), sleep=sleep):
            result.marked = True
            for user_id, registration_id in result.duplicates:
                logger.error("event %s: %s holds registration %s under the legacy key and another under the current "
                             "one; left in place", event_id, user_id, registration_id)
            return result
    raise _busy("This event's registrations are being moved right now; try again in a moment.")


def upgrade_if_legacy(*, event_id: str, layout: Any) -> bool:
    """A write refused on the event's item or a seat shard whose ALL_OLD image carries ``layout``: if that is the
    legacy layout, upgrade the event and return True (the caller builds its write again); else False."""
    if layout_of(layout) == CURRENT_LAYOUT:
        return False
    layout_upgrade(event_id=event_id)
    return True


def upgrade_if_refused_for_layout(cancelled: TransactionCancelled, label: str, *, event_id: str) -> bool:
    """``upgrade_if_legacy`` for the item ``label`` of a cancelled transaction, read from its ALL_OLD image; False
    when that item's condition held or the item does not exist (the caller's other reasons say why)."""
    if not cancelled.failed(label) or not cancelled.reasons[label].raw_item:
        return False
    layout = cancelled.reasons[label].raw_item.get("layout")
    return upgrade_if_legacy(event_id=event_id, layout=None if layout is None else layout.get("N"))


def _batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _move_pass(event_id: str, result: LayoutUpgrade, skipped: set[tuple[str, str]],
               sleep: Callable[[float], None]) -> int:
    """Move each legacy claim of the event with its copies, a page at a time; returns how many were stale."""
    stale = 0
    claims = RegistrationClaim.query(Event.pk_for(event_id),
                                     RegistrationClaim.sk.startswith(RegistrationClaim.SK_PREFIX), consistent_read=True)
    for batch in _batched(claims, MOVE_BATCH):
        batch = [claim for claim in batch if (claim.user_id, claim.registration_id) not in skipped]
        keys = [key for claim in batch for key in (
            Registration.legacy_event_key_for(event_id, claim.registration_id),
            Registration.user_key_for(claim.user_id, claim.registration_id))]
        copies = {(copy.pk, copy.sk): copy for copy in Registration.batch_get(keys, consistent_read=True)}
        for claim in batch:
            outcome = _move(claim,
                            copies.get(Registration.legacy_event_key_for(event_id, claim.registration_id)),
                            copies.get(Registration.user_key_for(claim.user_id, claim.registration_id)), sleep=sleep)
            if outcome == "moved":
                result.moved += 1
            elif outcome == "duplicate":
                skipped.add((claim.user_id, claim.registration_id))
                result.duplicates.append((claim.user_id, claim.registration_id))
            else:
                stale += 1
    return stale


def _kept(item: RegistrationClaim | Registration) -> dict[str, Any]:
    return {name: value for name, value in item.attribute_values.items() if name not in _KEY_ATTRIBUTES}


def _move(claim: RegistrationClaim, event_copy: Registration | None, user_copy: Registration | None, *,
          sleep: Callable[[float], None]) -> str:
    """One registration into the current layout, as one transaction: "moved", "stale" (it changed since the read:
    the next pass reads it again) or "duplicate" (its student holds a claim under the current key already)."""
    event_id, user_id, registration_id = claim.event_id, claim.user_id, claim.registration_id
    transaction = LabelledTransaction()
    transaction.delete(LEGACY_CLAIM, RegistrationClaim(*RegistrationClaim.legacy_key_for(event_id, user_id)),
                       condition=((RegistrationClaim.registration_id == registration_id)
                                  & (RegistrationClaim.status == claim.status)))
    transaction.save(CLAIM, RegistrationClaim(*RegistrationClaim.key_for(event_id, user_id), **_kept(claim)),
                     condition=RegistrationClaim.pk.does_not_exist(), return_old_on_failure=True)
    if event_copy is not None:
        transaction.delete(LEGACY_EVENT_REGISTRATION,
                           Registration(*Registration.legacy_event_key_for(event_id, registration_id)),
                           condition=Registration.status == event_copy.status)
        name = event_copy.user_name or event_copy.user_id
        transaction.save(EVENT_REGISTRATION, Registration(
            *Registration.event_key_for(event_id, registration_id), **_kept(event_copy),
            **attendees.index_fields(event_id=event_id, name=name, registration_id=registration_id),
        ), condition=Registration.pk.does_not_exist())
    if user_copy is not None:
        transaction.update(USER_REGISTRATION, Registration(*Registration.user_key_for(user_id, registration_id)),
                           actions=[Registration.layout.set(CURRENT_LAYOUT)],
                           condition=Registration.status == user_copy.status)
    try:
        WRITE_POLICY.sleeping(sleep).run(transaction.commit, busy=lambda _: _busy(
            "This event's registrations are being moved right now; try again in a moment."))
    except TransactionCancelled as cancelled:
        if cancelled.failed(CLAIM) and not cancelled.failed(LEGACY_CLAIM):
            current = cancelled.reasons[CLAIM].raw_item
            if current and RegistrationClaim.from_raw_data(current).registration_id != registration_id:
                return "duplicate"
        return "stale"
    return "moved"


def _mark(event_id: str, *, shards: int, sleep: Callable[[float], None]) -> bool:
    """The event and its ``shards`` seat shards current, in one transaction; False if the shards changed."""
    transaction = LabelledTransaction()
    transaction.update(EVENT_SEATS, EventSeats(*EventSeats.key_for(event_id)),
                       actions=[EventSeats.layout.set(CURRENT_LAYOUT)],
                       condition=EventSeats.seat_shards == shards)
    for shard in range(shards):
        transaction.update(f"shard_{shard}", SeatShard(*SeatShard.key_for(event_id, shard)),
                           actions=[SeatShard.layout.set(CURRENT_LAYOUT)], condition=SeatShard.pk.exists())
    try:
        WRITE_POLICY.sleeping(sleep).run(transaction.commit, busy=lambda _: _busy(
            "This event's registrations are being moved right now; try again in a moment."))
    except TransactionCancelled:
        return False  # a shard was added (an edit) or the event is gone: the caller reads again
    return True
