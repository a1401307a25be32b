"""Keys are built by the models' helpers only (README's rule): the invariant checks included. Where each item of a
registration lives (issue 13: nothing of a registration in the event's own partition)."""

import inspect
import re
from collections import Counter

from registrations import invariants
from registrations.events.models import Event
from registrations.models import REGISTRATION_BUCKETS, Registration, RegistrationClaim


def test_the_two_copies_of_a_registration_are_told_apart_by_model_helpers():
    event_pk, _ = Registration.event_key_for("e1", "r1")
    user_pk, _ = Registration.user_key_for("u1", "r1")
    assert event_pk == Registration.event_pk_for("e1", Registration.bucket_for("r1")) != Event.pk_for("e1")
    assert Registration.is_event_side(event_pk) and not Registration.is_user_side(event_pk)
    assert Registration.is_user_side(user_pk) and not Registration.is_event_side(user_pk)


def test_the_claim_lives_with_the_student_and_names_the_event():
    assert RegistrationClaim.key_for("e1", "u1") == ("USER#u1", "REGCLAIM#e1")
    # In the student's partition, beside (and never among) the student's registrations.
    assert RegistrationClaim.key_for("e1", "u1")[0] == Registration.user_key_for("u1", "r1")[0]
    assert not RegistrationClaim.key_for("e1", "u1")[1].startswith(Registration.SK_PREFIX)


def test_an_event_side_copy_and_its_index_entry_share_a_stable_bucket():
    ids = [f"{n:012x}{'ab' * 10}" for n in range(1_600)]
    buckets = [Registration.bucket_for(registration_id) for registration_id in ids]
    assert buckets == [Registration.bucket_for(registration_id) for registration_id in ids]  # stable
    spread = Counter(buckets)
    # Every bucket used, none with much more than its share (100 each on average).
    assert set(spread) == set(range(REGISTRATION_BUCKETS)) and max(spread.values()) < 150, spread
    for registration_id, bucket in zip(ids[:50], buckets[:50], strict=True):
        assert Registration.event_key_for("e1", registration_id) == (f"EVENTREG#e1#{bucket}",
                                                                     f"REGISTRATION#{registration_id}")
        assert Registration.attendee_index_key_for("e1", "Ann", registration_id) == (
            f"ATTENDEES#e1#{bucket}", f"ann#{registration_id}")


def test_invariants_spell_no_key_prefix():
    assert not re.findall(r"[\"'][A-Z_]+#", inspect.getsource(invariants))
