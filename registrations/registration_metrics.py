"""The registrations app's counters of the metrics contract (tems.telemetry), counted where a view answers."""

from __future__ import annotations

from registrations.services import RegistrationOutcome
from tems import telemetry

# A replay is not here: the idempotency layer notes every replay it answers (tems.idempotency.record), and the
# request's line counts it once.
_OUTCOME_METRICS = {
    "created": telemetry.REGISTRATION_CREATED,
    "already_registered": telemetry.REGISTRATION_ALREADY_REGISTERED,
}


def count_registration(outcome: RegistrationOutcome) -> None:
    metric = _OUTCOME_METRICS.get(outcome.kind)
    if metric is not None:
        telemetry.count(metric)
