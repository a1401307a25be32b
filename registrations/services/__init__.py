"""Writes of the registrations app, one module per capability. Each promise is kept by a DynamoDB condition,
never a prior read.

This package re-exports every public name, so ``from registrations import services`` and
``services.registration_create(...)`` read as they always did.
"""

from registrations.errors import RegistrationError
from registrations.services.cancel import (
    CANCEL_MAX_ROUNDS,
    cancel_response,
    registration_cancel,
    registration_cancel_once,
)
from registrations.services.cancellation import CANCELLATION_REQUESTED, event_cancel_once
from registrations.services.common import (
    BUSY_RETRY_AFTER_SECONDS,
    CLAIM,
    CONFLICT_BASE_DELAY,
    CONFLICT_MAX_DELAY,
    EVENT,
    EVENT_REGISTRATION,
    EVENT_SEATS,
    IDEMPOTENCY,
    MAX_CONFLICTS,
    MAX_ROUNDS,
    OUTBOX,
    TICKET_MAX_DELAY,
    USER_REGISTRATION,
    WAITLIST_ENTRY,
    StoredOutcome,
)
from registrations.services.events import (
    PROMOTION_REQUESTED,
    EventUpdate,
    event_api_location,
    event_create,
    event_create_once,
    event_update,
    new_event_id,
    waitlist_promotion_requested,
)
from registrations.services.offers import (
    offer_accept,
    offer_decline,
    offer_expire,
    offers_sweep,
)
from registrations.services.promotion import (
    HEAD_CLAIM,
    HEAD_EVENT_REGISTRATION,
    HEAD_USER_REGISTRATION,
    HEAD_WAITLIST_ENTRY,
    OUTBOX_PROMOTED,
    PROMOTION_BATCH,
    PROMOTION_STALE_ROUNDS,
    waitlist_promote,
)
from registrations.services.questions import QuestionsEditOutcome, questions_edit, questions_update
from registrations.services.registration import RegistrationOutcome, new_registration_id, registration_create

__all__ = [
    "offer_accept",
    "offer_decline",
    "offer_expire",
    "offers_sweep",
    "RegistrationError",
    "IDEMPOTENCY",
    "CLAIM",
    "USER_REGISTRATION",
    "EVENT_REGISTRATION",
    "WAITLIST_ENTRY",
    "EVENT_SEATS",
    "EVENT",
    "OUTBOX",
    "MAX_ROUNDS",
    "MAX_CONFLICTS",
    "CONFLICT_BASE_DELAY",
    "CONFLICT_MAX_DELAY",
    "TICKET_MAX_DELAY",
    "BUSY_RETRY_AFTER_SECONDS",
    "StoredOutcome",
    "HEAD_CLAIM",
    "HEAD_USER_REGISTRATION",
    "HEAD_EVENT_REGISTRATION",
    "HEAD_WAITLIST_ENTRY",
    "OUTBOX_PROMOTED",
    "PROMOTION_BATCH",
    "PROMOTION_STALE_ROUNDS",
    "waitlist_promote",
    "PROMOTION_REQUESTED",
    "new_event_id",
    "waitlist_promotion_requested",
    "event_create",
    "event_api_location",
    "event_create_once",
    "EventUpdate",
    "event_update",
    "RegistrationOutcome",
    "QuestionsEditOutcome",
    "questions_edit",
    "questions_update",
    "new_registration_id",
    "registration_create",
    "CANCEL_MAX_ROUNDS",
    "cancel_response",
    "registration_cancel",
    "registration_cancel_once",
    "CANCELLATION_REQUESTED",
    "event_cancel_once",
]
