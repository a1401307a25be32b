"""A tap already on its way when the erasure starts: its registration commits after the erasure listed the
person's registrations. The erasure lists again until nothing live is left, so it is cancelled too (its seat to
the next in line) and no trace of the person stays; a variant that lists once leaves it behind."""

import pytest

from registrations.privacy import selectors as privacy_selectors
from registrations.privacy import services as privacy
from registrations.services.cancel import registration_cancel_once
from tests.helpers import assert_invariants_clean
from tests.registrations.helpers import make_event
from tests.registrations.privacy.helpers import (
    ERASED_AT,
    full_event_with_waiting,
    person,
    register_person,
    status_of,
    table_dump,
)

pytestmark = pytest.mark.django_db(transaction=True)


def _late_tap_after_first_listing(monkeypatch, event_id: str, user) -> None:
    listed = privacy_selectors.user_registrations
    calls = []

    def listing_then_a_late_commit(**kwargs):
        found = listed(**kwargs)
        if not calls:
            register_person(event_id, user)  # the tap that was already past the log-in check
        calls.append(found)
        return found

    monkeypatch.setattr(privacy_selectors, "user_registrations", listing_then_a_late_commit)


def _cancel_live_listing_once(*, user_id, now):
    """The broken variant: one listing, then done."""
    registrations = privacy_selectors.user_registrations(user_id=user_id)
    for registration in registrations:
        registration_cancel_once(
            user_id=user_id, registration_id=registration["registration_id"],
            idempotency_key=privacy.erase_key(user_id=user_id, registration_id=registration["registration_id"]),
            fingerprint=privacy.erase_fingerprint(user_id=user_id, registration_id=registration["registration_id"]))
    return len(registrations)


def test_a_registration_committing_after_the_first_listing_is_cancelled_too(ddb, monkeypatch):
    alice, bob = person("alice.liddell", "alice@wonder.test"), person("bob", "bob@uni.test")
    full_event_with_waiting(alice)
    late = make_event(capacity=1)
    register_person(late.event_id, person("cat", "cat@uni.test"))  # full: alice's late tap joins the waiting list
    register_person(late.event_id, bob)
    _late_tap_after_first_listing(monkeypatch, late.event_id, alice)

    report = privacy.personal_data_erase(user=alice, now=ERASED_AT)

    assert report.cancelled == 2
    assert status_of(late.event_id, bob) == "waitlisted"  # alice queued after bob: her leaving changes nothing
    assert "alice.liddell" not in table_dump()
    assert_invariants_clean()


def test_the_variant_that_lists_once_leaves_the_late_registration_behind(ddb, monkeypatch):
    alice = person("alice.liddell", "alice@wonder.test")
    full_event_with_waiting(alice)
    late = make_event(capacity=2)
    _late_tap_after_first_listing(monkeypatch, late.event_id, alice)
    monkeypatch.setattr(privacy, "_cancel_live", _cancel_live_listing_once)

    privacy.personal_data_erase(user=alice, now=ERASED_AT)

    assert "alice.liddell" not in table_dump()  # the late copy was pseudonymised as if it were history...
    assert status_of(late.event_id, alice) == "confirmed"  # ...but it still holds a seat nobody will use
