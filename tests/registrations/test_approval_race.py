"""Two approvers publish the same draft at the same instant: one publication, one 409 naming who published. On
DynamoDB Local, with a read-then-write variant seen failing (the race is real and the test can fail)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from registrations import selectors
from registrations.approvals import services as approval_services
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.events.models import EventPublication
from registrations.seating import shards
from tems.clock import utcnow
from tests.helpers import assert_invariants_clean
from tests.race import WindowHeldOpen, race


def draft() -> str:
    event = event_services.event_create(title="Go club night", starts_at=utcnow() + timedelta(days=3), capacity=120,
                                        created_by="soc", team="go-soc", draft=True)
    return event.event_id


def publish(event_id: str, approver: str) -> tuple[int, str]:
    try:
        outcome = approval_services.event_publish_once(
            event_id=event_id, user_id=f"u-{approver}", published_by=approver,
            idempotency_key=str(uuid.uuid4()), fingerprint=f"publish-{event_id}")
    except RegistrationError as error:
        return error.status, error.detail
    return outcome.response.status, approver


def read_then_write(window: WindowHeldOpen):
    """Broken: the read decides ("still a draft?") and the write carries no condition on the state."""
    def decide(event):
        if not event.is_draft:
            raise RegistrationError("conflict", "Already published.")
        window()
        return EventPublication.pk.exists()
    return decide


@pytest.mark.parametrize("broken", [False, pytest.param(True, marks=pytest.mark.xfail(strict=True, reason=(
    "the read-then-write variant publishes twice: proves the race is real and the test can fail")))],
    ids=["conditional", "broken-read-then-write"])
def test_two_approvers_at_once_one_publishes_and_the_other_hears_who(ddb, monkeypatch, broken):
    if broken:
        monkeypatch.setattr(approval_services, "still_a_draft", read_then_write(WindowHeldOpen(timeout=30)))
    event_id = draft()
    results = race([lambda: publish(event_id, "Ann"), lambda: publish(event_id, "Ben")])
    assert sorted(status for status, _ in results) == [200, 409], results
    (winner,) = [who for status, who in results if status == 200]
    (refusal,) = [detail for status, detail in results if status == 409]
    assert refusal.startswith(f"Already published by {winner}")
    event = selectors.event_get(event_id=event_id)
    assert not event.is_draft and event.published_by == winner
    count = int(event.seat_shards)
    assert count > 1 and not any(shard.draft for shard in shards.shards_get(event_id=event_id, count=count))
    assert_invariants_clean()
