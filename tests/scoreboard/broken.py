"""DELIBERATELY BROKEN variants: each reproduces one peer's bug with TEMS's own items, so a scoreboard scenario
can be seen failing against it. Tests only; no app module imports this.

Each is the smallest change that brings the peer's design back: a capacity decided by a read, a count kept
beside the data, a cancel that forgets the seat, a mail sent outside the transaction, a relay without leases, a
door that reads before it writes, an accept that decides from a read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from lab.techniques.registration import Attempt, no_pause
from registrations import selectors, services
from registrations.checkins.models import CheckIn, EventCheckins
from registrations.messages import services as messages
from registrations.models import CONFIRMED, OFFERED, WAITLISTED, Registration, RegistrationClaim
from registrations.offers import services as offer_services
from registrations.seating.models import SeatShard
from registrations.ticket_tokens import ticket_read
from tems import outbox
from tems.clock import utcnow
from tems.outbox import OutboxMessage
from tems.transactions import LabelledTransaction

Pause = Callable[[], None]


def _store_confirmed(event_id: str, user_id: str) -> str:
    """A confirmed registration's claim and both copies, as separate writes (the claim still unique)."""
    registration_id = services.new_registration_id()
    fields = {"registration_id": registration_id, "event_id": event_id, "user_id": user_id, "status": CONFIRMED,
              "created_at": utcnow(), "shard": 0}
    RegistrationClaim(*RegistrationClaim.key_for(event_id, user_id), **fields).save(
        condition=RegistrationClaim.pk.does_not_exist())
    Registration(*Registration.user_key_for(user_id, registration_id), **fields).save()
    Registration(*Registration.event_key_for(event_id, registration_id), **fields).save()
    return registration_id


def _seats(event_id: str) -> SeatShard:
    return SeatShard.get(*SeatShard.key_for(event_id, 0), consistent_read=True)


def count_read_then_written(*, event_id: str, user_id: str, idempotency_key: str,
                            pause: Pause = no_pause) -> Attempt:
    """A "sold" count read, checked and written back as read + 1: two sales that read the same count write the
    same number, one sale is never counted, and the count lets one more in than there are seats."""
    seats = _seats(event_id)
    if seats.taken >= seats.capacity:
        return Attempt(None, WAITLISTED)
    pause()
    registration_id = _store_confirmed(event_id, user_id)
    SeatShard(*SeatShard.key_for(event_id, 0)).update(actions=[SeatShard.taken.set(int(seats.taken) + 1)])
    return Attempt(registration_id, CONFIRMED)


def count_beside_the_data(*, event_id: str, user_id: str, idempotency_key: str,
                          pause: Pause = no_pause) -> Attempt:
    """The registration written, then the count moved by a write of its own: a retried count write (its answer
    lost) counts twice, and nothing ever recounts."""
    pause()
    registration_id = _store_confirmed(event_id, user_id)
    SeatShard(*SeatShard.key_for(event_id, 0)).update(actions=[SeatShard.taken.add(1)])
    return Attempt(registration_id, CONFIRMED)


def cancel_keeping_the_seat(*, user_id: str, registration_id: str) -> None:
    """A cancel that removes the registration but never gives its seat back: capacity stays taken."""
    mine = selectors.registration_get(user_id=user_id, registration_id=registration_id)
    RegistrationClaim(*RegistrationClaim.key_for(mine.event_id, user_id)).delete()
    Registration(*Registration.event_key_for(mine.event_id, registration_id)).delete()
    mine.delete()


def mails_outside_the_transaction(monkeypatch, message_types: Collection[str], *, sent: str) -> None:
    """Mails of ``message_types`` sent by the request itself instead of an outbox item in its transaction:
    ``sent="before"`` the commit (a mail for a write that may then fail), ``"after"`` it (a mail lost if the
    process dies in between)."""
    original_save, original_commit = LabelledTransaction.save, LabelledTransaction.commit
    handlers = outbox.configured_handlers()

    def save(self, label, model, condition=None, **kwargs):
        if isinstance(model, OutboxMessage) and model.message_type in message_types:
            self.__dict__.setdefault("mails_outside", []).append(model)
            return None
        return original_save(self, label, model, condition, **kwargs)

    def send(self) -> None:
        for message in self.__dict__.get("mails_outside", []):
            handlers[message.message_type](message)

    def commit(self):
        if sent == "before":
            send(self)
        original_commit(self)
        if sent == "after":
            send(self)

    monkeypatch.setattr(LabelledTransaction, "save", save)
    monkeypatch.setattr(LabelledTransaction, "commit", commit)


def relay_without_leases(window: Pause) -> None:
    """A relay that lists what is due, sends it and deletes it, claiming nothing: two relays send everything
    twice."""
    handlers = outbox.configured_handlers()
    pending = outbox.outbox_pending()
    window()  # between the listing and the sending
    for message in pending:
        handlers[message.message_type](message)
        OutboxMessage(*OutboxMessage.key_for(message.message_id)).delete()


def door_read_then_write(*, event_id: str, ticket_text: str, door: str, staff_id: str, window: Pause,
                         **_: Any) -> dict:
    """A door that reads "is this ticket checked in?", then writes: two doors can both read "no"."""
    ticket = ticket_read(text=ticket_text)
    key = CheckIn.key_for(event_id, ticket.registration_id)
    try:
        first = CheckIn.get(*key, consistent_read=True)
        return {"status": "already_checked_in", "door": first.door}
    except CheckIn.DoesNotExist:
        pass
    window()
    CheckIn(*key, registration_id=ticket.registration_id, event_id=event_id, user_id=ticket.user_id,
            checked_in_at=utcnow(), checked_in_by=staff_id, door=door).save()
    EventCheckins(*EventCheckins.key_for(event_id)).update(actions=[EventCheckins.checked_in_count.add(1)])
    return {"status": "checked_in", "door": door}


def accept_deciding_from_a_read(monkeypatch) -> None:
    """An accept that first reads "is this offer still open?" and, when it is not, tells the student their seat
    went on: a second click on the mail's link gets a false answer."""
    real = offer_services.offer_accept

    def accept(*, user_id: str, registration_id: str, **kwargs):
        offer = selectors.offer_get(user_id=user_id, registration_id=registration_id)
        if offer.state != OFFERED:
            raise services.RegistrationError("offer_expired",
                                             "This offer has run out: the seat went to the next in line.")
        return real(user_id=user_id, registration_id=registration_id, **kwargs)

    monkeypatch.setattr(offer_services, "offer_accept", accept)


def message_per_click(monkeypatch) -> None:
    """A staff message's id drawn fresh per click and no idempotency record: each click is a new message."""
    import uuid

    monkeypatch.setattr(messages, "_staff_message_id", lambda *args: uuid.uuid4().hex)
    monkeypatch.setattr(messages, "add_completed_record", lambda *args, **kwargs: None)



def newest_first(monkeypatch) -> None:
    """The waiting list read newest first (a LIFO pick): a freed seat goes to the last person who joined."""

    def heads(*, event_id: str, limit: int, lanes=None) -> list:
        return selectors.waitlist_entries(event_id=event_id)[::-1][:limit]

    monkeypatch.setattr(selectors, "waitlist_heads", heads)


def conditions_dropped(monkeypatch, window: Pause) -> None:
    """Every write sent without its condition, after a window held open for a second writer: decisions taken
    from a read that nothing checks when the write lands."""
    save, update, delete, commit = (LabelledTransaction.save, LabelledTransaction.update,
                                    LabelledTransaction.delete, LabelledTransaction.commit)

    def unconditional_save(self, label, model, condition=None, **kwargs):
        return save(self, label, model, None, **kwargs)

    def unconditional_update(self, label, model, actions, condition=None, **kwargs):
        return update(self, label, model, actions, None, **{**kwargs, "add_version_condition": False})

    def unconditional_delete(self, label, model, condition=None, **kwargs):
        return delete(self, label, model, None, **{**kwargs, "add_version_condition": False})

    def late_commit(self):
        window()
        return commit(self)

    monkeypatch.setattr(LabelledTransaction, "save", unconditional_save)
    monkeypatch.setattr(LabelledTransaction, "update", unconditional_update)
    monkeypatch.setattr(LabelledTransaction, "delete", unconditional_delete)
    monkeypatch.setattr(LabelledTransaction, "condition_check", lambda self, *args, **kwargs: None)
    monkeypatch.setattr(LabelledTransaction, "commit", late_commit)
