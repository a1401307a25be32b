"""What every scoreboard scenario shares: the report it replays, its two variants, and the steps a student or
staff member takes, through TEMS's public entry points only (``registrations.services``, the selectors, the
outbox relay, the door's services, the HTTP API).

A scenario module names its report in ``REPORT`` and runs one test twice: against TEMS (``variant == "tems"``),
where the reporter's expectation must hold, and against a broken variant that reproduces the peer's bug
(``tests/scoreboard/broken.py``), where the same assertion must fail. The broken run is a strict xfail on an
AssertionError: if the broken variant ever passes, the scenario cannot tell the difference and the run fails.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User

from lab.techniques.registration import Attempt, registration_fingerprint
from registrations import selectors, services
from registrations.events import services as event_services
from registrations.models import CONFIRMED, WAITLISTED
from registrations.seating.shards import event_seat_counts
from tems import outbox
from tems.accounts import email_address_mark_verified
from tems.clock import utcnow
from tems.identity import user_key

TEMS = "tems"
BROKEN = "broken"
# An event far enough ahead that nothing in a scenario closes registration.
STARTS = datetime(2031, 5, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Report:
    """One public report against another event system, and how the scoreboard replays it."""

    peer: str
    issue: str  # as the peer's tracker names it: "#321", "PR #469"
    url: str
    wrong: str  # what went wrong, as the reporter saw it
    scenario: str = ""  # the same situation built on TEMS, and what is asserted
    broken: str = ""  # what the broken variant does: the peer's bug, reproduced
    missing: str = ""  # set when TEMS has no such feature: the row says so instead of a result


def variants(bug: str) -> list:
    """The two runs of a scenario: TEMS, and the broken variant that must fail the same assertion."""
    return [TEMS, pytest.param(BROKEN, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=bug))]


def not_in_tems(report: Report) -> None:
    """A report TEMS cannot replay: the row says why (no pretended result)."""
    pytest.skip(report.missing)


def new_key() -> str:
    return str(uuid.uuid4())


def event(capacity: int, **fields):
    return event_services.event_create(title="Open day", starts_at=STARTS, capacity=capacity, created_by="staff",
                                 **fields)


def no_wait(seconds: float) -> None:
    """The pause between a service's retry rounds, skipped: a scenario waits on no wall-clock time."""


def tems_registration(*, event_id: str, user_id: str, idempotency_key: str,
                      pause: Callable[[], None] | None = None) -> Attempt:
    """TEMS's registration with the lab's techniques' signature (so a race swaps it for a broken one), pausing
    on no wall-clock time between its rounds. There is no read before its write, so ``pause`` has no window."""
    outcome = register(event_id, user_id, key=idempotency_key)
    return Attempt(outcome.data["registration_id"], outcome.kind, outcome.response.body)


def register(event_id: str, user_id: str, *, key: str | None = None, user_name: str | None = None):
    return services.registration_create(event_id=event_id, user_id=user_id, user_name=user_name or user_id,
                                        idempotency_key=key or new_key(),
                                        fingerprint=registration_fingerprint(event_id=event_id, user_id=user_id),
                                        sleep=no_wait)


def registrations_by_status(event_id: str) -> dict[str, list]:
    """Every registration of the event as stored, by status: the recount a reporter ran in SQL."""
    found: dict[str, list] = {}
    for registration in selectors.event_registrations(event_id=event_id):
        found.setdefault(registration.status, []).append(registration)
    return found


def confirmed(event_id: str) -> list:
    return registrations_by_status(event_id).get(CONFIRMED, [])


def waitlisted(event_id: str) -> list:
    return registrations_by_status(event_id).get(WAITLISTED, [])


def seats_shown(event_id: str) -> int:
    """The seats taken as every page shows them (the shards summed by `seat_counts`)."""
    return int(event_seat_counts(event_id).registered)


def students(count: int, prefix: str = "s") -> list[User]:
    """Accounts with verified addresses (TEMS mails only those), logged in by the test, so without a password
    to hash."""
    users = [User.objects.create_user(f"{prefix}{n}", f"{prefix}{n}@uni.test") for n in range(count)]
    for user in users:
        email_address_mark_verified(user=user)
    return users


def register_student(event_id: str, user: User, **kwargs):
    return register(event_id, user_key(user), user_name=user.username, **kwargs)


def relay_until_empty(*, passes: int = 10, now: Callable[[], datetime] = utcnow) -> None:
    """Relay passes until the outbox is empty, each pass's clock past the leases of any before it: a relay
    killed while holding a message is replaced by the next pass, without waiting a minute of wall-clock time."""
    start = now()
    for n in range(passes):
        at = start + n * (outbox.LEASE + timedelta(seconds=1))
        outbox.outbox_relay(now=lambda at=at: at)
        if not outbox.outbox_pending(now=at + outbox.LEASE * 2):
            return
    raise AssertionError("the outbox did not empty")


def mails_to(mailbox: list, user: User, subject: str) -> list:
    """The mails to ``user`` whose subject contains ``subject``."""
    return [mail for mail in mailbox if user.email in mail.to and subject in mail.subject]


class ProcessKilled(BaseException):
    """The process dying: not an Exception, so nothing in the app catches it."""


def kill_first_send(monkeypatch, subject_starts: str) -> None:
    """The process sending the first mail whose subject starts so dies at that moment (the relay's, or the
    request's when a variant mails from the request)."""
    from django.core.mail import EmailMessage

    original = EmailMessage.send
    killed = []

    def send(self, *args, **kwargs):
        if self.subject.startswith(subject_starts) and not killed:
            killed.append(self.subject)
            raise ProcessKilled(f"killed while sending {self.subject!r}")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(EmailMessage, "send", send)


def relay_surviving_a_kill() -> None:
    """Run the relay; when its process is killed, a new one takes over once the dead one's lease runs out."""
    try:
        relay_until_empty()
    except ProcessKilled:
        relay_until_empty()
