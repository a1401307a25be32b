"""The registration's own writes: its creation (``create``), its cancel (``cancel``) and the waiting-list head's
promotion (``promotion``); each promise is kept by a DynamoDB condition, never a prior read. The features'
writes live in their packages (``registrations.events.services``, ``offers.services``, ``messages.services``,
``questions.services``, ``checkins.services``, ``privacy.services``), and what every write of the app shares in
``registrations.write_rules``.

This package re-exports its modules' public names: ``from registrations import services`` and
``services.registration_create(...)``.
"""

from registrations.errors import RegistrationError
from registrations.services.cancel import (
    CANCEL_MAX_ROUNDS,
    cancel_response,
    registration_cancel,
    registration_cancel_once,
)
from registrations.services.create import registration_create
from registrations.services.outcome import RegistrationOutcome, new_registration_id
from registrations.services.promotion import (
    PROMOTION_BATCH,
    PROMOTION_STALE_ROUNDS,
    waitlist_promote,
)

__all__ = [
    "RegistrationError",
    "RegistrationOutcome",
    "new_registration_id",
    "registration_create",
    "CANCEL_MAX_ROUNDS",
    "cancel_response",
    "registration_cancel",
    "registration_cancel_once",
    "PROMOTION_BATCH",
    "PROMOTION_STALE_ROUNDS",
    "waitlist_promote",
]
