"""Keys are built by the models' helpers only (README's rule): the invariant checks included."""

import inspect
import re

from registrations import invariants
from registrations.models import Event, Registration


def test_the_two_copies_of_a_registration_are_told_apart_by_model_helpers():
    event_pk, _ = Registration.event_key_for("e1", "r1")
    user_pk, _ = Registration.user_key_for("u1", "r1")
    assert event_pk == Event.pk_for("e1")
    assert Registration.is_event_side(event_pk) and not Registration.is_user_side(event_pk)
    assert Registration.is_user_side(user_pk) and not Registration.is_event_side(user_pk)


def test_invariants_spell_no_key_prefix():
    assert not re.findall(r"[\"'][A-Z_]+#", inspect.getsource(invariants))
