"""``make bench-hot`` (``python -m tests.bench hot``): one hot event, a crowd arriving at once, per seat design.

The scenario (issue 13): a 10,000-seat event and 12,000 students arriving over 10 s, 10 % of them double-tapping
(a second request with a fresh Idempotency-Key 50-150 ms later) and 5 % retrying with the same key. Each seat
design in ``SEAT_DESIGNS`` runs the same crowd, one after the other, in one run, on a fresh table, and the
section reports per design: accepted registrations/s, the share answered 503, p50/p99 latency, the hottest
partition's peak WCU/s against its limit, throttles and conflicts, and, read back from the table afterwards,
duplicates, oversell, the confirmed count and the waiting list's order.

How it is driven, and why:

- **Through the capacity model** (``tests.support.capacity_model``): DynamoDB Local never throttles nor conflicts, so
  without the model a hot event would look fine. The app's models point at the model's endpoint. The model runs
  as a child process (``python -m tests.support.capacity_model``), so its Python does not share a GIL with the crowd.
- **In process, not through HTTP**: ``registrations.services.registration_create`` is called directly, as the
  API view does. Two shared cores cannot push HTTP (gunicorn + Django + the proxy + DynamoDB Local) at the
  rates needed; the view adds parsing and a status mapping, no DynamoDB request. A ``RegistrationError('busy')``
  is what the API answers 503; any other exception escaping the service would be a 500 and is counted apart.
- **One QR code drawing** (``qr_drawn_once``): written when the service still drew the ticket's QR code inside its
  write; it now draws it on read (issue 13 item 3), so this only keeps a read-side drawing out of the way.
  ``HOT_REAL_QR=1`` turns it off.
- **Open loop**: a scheduler thread releases request i at t0 + t_i (fixed rate, whatever the answers), onto a
  thread pool large enough that an arrival never waits for a thread. The lag between scheduled and actual start
  is measured and reported: if it grows, the machine could not offer the load and the run says so.
- **Scale model.** Two cores cannot offer 1,380 requests/s. With time scale S (``HOT_SCALE``) every AWS limit is
  divided by S and every duration multiplied by S: the capacity model's hold time and limits' window, the arrival
  spacing, the double tap's delay, and the service's own retry pauses (its ``sleep`` is stretched by S), so one
  machine second stands for 1/S of a real second. With crowd divisor K (``HOT_CROWD``) the students and the
  seats are divided by K at the same arrival rate, so the run lasts 10 s x S / K on the machine and covers the
  first 10/K real seconds' worth of a crowd of the same shape. Converting back: rates x S, latencies / S, WCU as
  the model reports them at scale; counts are of the 1/K crowd (shares and orders carry over, absolute counts x
  K). What K does not preserve: anything bounded by an absolute count (a waitlist burst of N joiners needs up to
  N rounds of the service's MAX_ROUNDS = 64).
- **Seat designs are a parameter**: ``SEAT_DESIGNS`` maps a name to how its event is created. Both run the
  service as it is; "single counter" puts every seat on one shard item (the design before issue 13, one hot
  item), "sharded" uses the count the shard rule gives a real 10,000-seat event (``HOT_SEAT_SHARDS`` overrides).
  A design whose registrations take another path plugs in its own ``register``.

This section is slow (two runs of a minute or more), so ``SLOW = True`` keeps it out of the default
``make bench``; it writes its own page, docs/PERFORMANCE-hot.md, with a chart per transaction hold,
docs/bench-hot-<hold>ms.svg, and docs/PERFORMANCE.md links to it.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.test import override_settings

from lab.techniques.registration import registration_fingerprint
from registrations import selectors, serializers, services, write_rules
from registrations.errors import RegistrationError
from registrations.events import services as event_services
from registrations.models import CONFIRMED, WAITLISTED, RegistrationClaim
from registrations.seating import lanes, positions, router, shards
from registrations.seating.gate import GateBusy
from tems.clock import utcnow
from tems.dynamo import TableConfig, boto3_client, configure_models, ensure_table
from tems.invariants import OutboxNotStale, check_items, registered_checks, scan_items
from tems.local_dynamodb import free_port
from tems.metering import ready_clients
from tems.transactions import (
    TRANSACTION_CONFLICT,
    TRANSIENT_REASONS,
    LabelledTransaction,
    TransactionCancelled,
)
from tests.bench.context import BenchContext
from tests.support.capacity_model import REPORT_PATH, RESET_PATH

SLOW = True  # not part of the default ``make bench``: ``make bench-hot`` runs it
# What a full ``make bench`` puts in this section's place: the page and the chart ``make bench-hot`` wrote last.
LINK = ("## Hot event: one 10,000-seat event, 12,000 students at its opening\n\n"
        "Per seat design and transaction hold (10 ms and 25 ms), through the capacity model: accepted "
        "registrations/s, 503s, latency, the hottest partition against its limit, duplicates, oversell and waitlist "
        "order, in [PERFORMANCE-hot.md](PERFORMANCE-hot.md), written by `make bench-hot` (`tests/bench/hot.py`; "
        "minutes, so not part of `make bench`).\n")
DOCS = Path(__file__).resolve().parents[2] / "docs"
OUTPUT = DOCS / "PERFORMANCE-hot.md"


def chart_path(hold_ms: float) -> Path:
    return DOCS / f"bench-hot-{hold_ms:g}ms.svg"

# The scenario at real scale (issue 13, item 4).
STUDENTS = 12_000
CAPACITY = 10_000
ARRIVAL_SECONDS = 10.0
DOUBLE_TAP_SHARE = 0.10  # a second tap with a fresh key
SAME_KEY_RETRY_SHARE = 0.05  # the client repeats the request with the same key
SECOND_TAP_MS = (50.0, 150.0)  # how long after the first tap the second comes, real time

# The scale model (module docstring). S = 20 keeps the scaled hold (200 ms) above DynamoDB Local's time per
# transaction on a busy two-core machine; the limits' window is scaled with S (tests/support/capacity_model.py), so
# a larger S only makes the run longer. K = 20 makes 600 students for 500 seats arrive at 60/s for 10 s: with the single
# counter's tail of retries (its p99 is seconds, x S on the machine) about 90 s per design, a quick look. A
# sustained rate needs a longer crowd; the page of record is the full one, K = 1 (about 96 minutes):
# HOT_SECONDS=5 HOT_SCALE=480 HOT_CROWD=1 (docs/journal/2026-12-04-registrations.md).
SCALE = float(os.environ.get("HOT_SCALE", 20))
CROWD = float(os.environ.get("HOT_CROWD", 20))
# How long a transaction holds its items, at real scale. 10 ms is the capacity model's documented assumption;
# 25 ms is a measured median for a five-item TransactWriteItems on AWS (its p99 is about 92 ms). The page of record
# shows both: HOT_HOLD_MS=25 make bench-hot adds or replaces the 25 ms section and keeps the others.
HOLD_MS = float(os.environ.get("HOT_HOLD_MS", 10))
# Each hold's figures and section, so a run at one hold rewrites the page without losing the other's.
RECORD = DOCS / "bench-hot.json"
# The table's ceiling. An on-demand table starts at 4,000 WCU/s (the model's default), which caps the whole table
# at ~300 registrations/s whatever the design (a first registration is 12-14 WCU). A table expecting a popular
# event is pre-warmed ("warm throughput") to AWS's default per-table quota of 40,000 WCU/s and 40,000 RCU/s;
# the bench models that table, and says so in its report (HOT_TABLE_WCU=4000 shows the cold one).
TABLE_WCU = float(os.environ.get("HOT_TABLE_WCU", 40_000))
TABLE_RCU = float(os.environ.get("HOT_TABLE_RCU", 40_000))
# Enough threads that an arrival never waits for one: arrivals/s x the longest a request takes (a student who
# meets every conflict pauses up to 12 x 250 ms x S), started before the first arrival; never more than the
# crowd has requests. 1,500 was too few for the single counter at K = 4, S = 240 (3,450 requests, most of them
# retrying for minutes of machine time): arrivals waited up to 240 s for a thread.
POOL_THREADS = int(os.environ.get("HOT_THREADS", 4000))
# A seat item admits one transaction per hold (100/s at 10 ms; its partition's WCU would allow ~166): 2,000/s
# needs at least 20 shards. By default the count the shard rule gives the real 10,000-seat event.
SEAT_SHARDS = int(os.environ.get("HOT_SEAT_SHARDS", 0)) or shards.shard_count(10_000)
SEED = 13
TARGET_PER_S = 2_000  # issue 13: registrations/s sustained for the hot event
BUCKETS_PER_REAL_SECOND = 4  # the chart's resolution: a point per quarter of a real second


# --- seat designs -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SeatDesign:
    """How a design's hot event is created, and how a student registers for it (today's service by default)."""

    create_event: Callable[[int], str]  # capacity -> event_id
    missing: Callable[[], str | None] = lambda: None  # why the design is not in this build, or None
    register: Callable[..., Any] = services.registration_create


def _event(capacity: int, *, shards: int, **fields: Any) -> str:
    """The hot event, split over exactly ``shards`` seat shards (the count is fixed when the event is created).

    The count is set through the shard rule's own settings, so the service's real path makes the event."""
    per_shard = -(-capacity // shards)
    with override_settings(SEATS_PER_SHARD=per_shard, MAX_SEAT_SHARDS=shards):
        return event_services.event_create(title="Hot event", starts_at=utcnow() + timedelta(days=30),
                                           capacity=capacity, created_by="bench-hot", **fields).event_id


# "single counter": every seat on one item, as before issue 13 (then on the event item itself, which GSI1 also
# indexed; here a shard item of its own, which flatters it a little). "sharded": the count the shard rule gives
# the real 10,000-seat event (registrations.seating.shards.shard_count), whatever K divides the seats by, so the scaled
# crowd meets as many shards as the real one would.
SEAT_DESIGNS: dict[str, SeatDesign] = {
    "single counter": SeatDesign(create_event=lambda capacity: _event(capacity, shards=1)),
    "sharded": SeatDesign(create_event=lambda capacity: _event(capacity, shards=SEAT_SHARDS)),
}


# --- the QR code, drawn once --------------------------------------------------------------------------------------

@contextmanager
def qr_drawn_once() -> Iterator[None]:
    """Every registration's QR code is the first one drawn (same size, so the same WCU), unless HOT_REAL_QR=1.

    The service draws the ticket's QR code SVG (28 ms of Python on this machine) in every round of its retry
    loop, and a hot single counter costs ~8 rounds per request: in one client process that alone was more CPU than
    two cores have, so the crowd arrived late. On AWS that CPU is the app servers', which scale out; the database
    sees the record's size, which this keeps. (A finding for the service: draw it once per registration.)"""
    if os.environ.get("HOT_REAL_QR") == "1":
        yield
        return
    real = serializers.registration_qr_svg
    drawn: list[str] = []

    def once(*, ticket_url: str) -> str:
        if not drawn:
            drawn.append(real(ticket_url=ticket_url))
        return drawn[0]

    serializers.registration_qr_svg = once
    try:
        yield
    finally:
        serializers.registration_qr_svg = real


# --- the capacity model, in a process of its own ---------------------------------------------------------------

class ModelProcess:
    """``python -m tests.support.capacity_model`` as a child process, with CapacityModel's ``endpoint``,
    ``report`` and ``reset``.

    In process, the proxy's Python and a thousand client threads share one GIL: on two cores the scheduler then
    fell 26 s behind a 5 s crowd. In its own process the proxy has the other core."""

    def __init__(self, *, upstream: str, scale: float, hold_ms: float, table_wcu: float = TABLE_WCU,
                 table_rcu: float = TABLE_RCU) -> None:
        self.port = free_port()
        self.scale = scale
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.capacity_model", "--upstream", upstream, "--port", str(self.port),
             "--scale", str(scale), "--hold-ms", str(hold_ms), "--table-wcu", str(table_wcu),
             "--table-rcu", str(table_rcu)], stdout=subprocess.DEVNULL)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ModelProcess:
        deadline = time.monotonic() + 30
        while True:
            try:
                self.report(top=1)
                return self
            except OSError:
                if time.monotonic() > deadline or self._process.poll() is not None:
                    self.__exit__()
                    raise RuntimeError("the capacity model did not start") from None
                time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def report(self, *, top: int | None = None) -> dict[str, Any]:
        query = f"?top={top}" if top else ""
        with urllib.request.urlopen(f"{self.endpoint}{REPORT_PATH}{query}", timeout=30) as answer:
            return json.loads(answer.read())

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.endpoint}{RESET_PATH}", method="POST", data=b"")
        with urllib.request.urlopen(request, timeout=30) as answer:
            answer.read()


# --- the crowd --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scenario:
    students: int = STUDENTS
    capacity: int = CAPACITY
    arrival_seconds: float = ARRIVAL_SECONDS
    scale: float = SCALE
    crowd: float = CROWD
    hold_ms: float = HOLD_MS
    threads: int = POOL_THREADS

    @property
    def run_students(self) -> int:
        return max(1, round(self.students / self.crowd))

    @property
    def run_capacity(self) -> int:
        return max(1, round(self.capacity / self.crowd))

    @property
    def real_rate(self) -> float:
        """Students arriving per real second."""
        return self.students / self.arrival_seconds

    @property
    def machine_rate(self) -> float:
        return self.real_rate / self.scale

    @property
    def machine_seconds(self) -> float:
        return self.run_students / self.machine_rate


@dataclass(frozen=True)
class Tap:
    at: float  # machine seconds after t0
    student: int
    key: str
    kind: str  # "first", "double tap" (fresh key) or "retry" (same key)


def crowd(scenario: Scenario, *, seed: int = SEED) -> list[Tap]:
    """Every request of the run, in the order they are due: one first tap per student at a fixed rate, plus the
    second taps of the double-tappers and the retriers (disjoint groups, picked at random)."""
    rng = random.Random(seed)
    n = scenario.run_students
    students = list(range(n))
    rng.shuffle(students)
    doubles = set(students[:round(n * DOUBLE_TAP_SHARE)])
    retries = set(students[len(doubles):len(doubles) + round(n * SAME_KEY_RETRY_SHARE)])
    taps = []
    for student in range(n):
        at = student / scenario.machine_rate
        key = str(uuid.UUID(int=rng.getrandbits(128)))
        taps.append(Tap(at, student, key, "first"))
        if student in doubles or student in retries:
            later = at + rng.uniform(*SECOND_TAP_MS) / 1000 * scenario.scale
            taps.append(Tap(later, student, str(uuid.UUID(int=rng.getrandbits(128))) if student in doubles else key,
                            "double tap" if student in doubles else "retry"))
    return sorted(taps, key=lambda tap: tap.at)


@dataclass
class Answer:
    tap: Tap
    lag: float  # machine seconds between the scheduled and the actual start
    started: float  # machine seconds after t0
    seconds: float  # machine seconds the call took
    outcome: str  # "created", "already_registered", "replayed", "busy" (503), or "error: <type>" (500)
    status: str | None = None  # confirmed / waitlisted, from the answer's body
    position: int | None = None
    # Every DynamoDB request the call sent, when HOT_TRACE names a file: (operation, machine seconds after t0 it
    # started, machine seconds it took, error code or "").
    trace: list[tuple[str, float, float, str]] = field(default_factory=list)
    # Machine seconds of ``seconds`` spent inside DynamoDB calls (the model's hold, DynamoDB Local, the proxy, the
    # connection pool, botocore's own retries) and in the service's pauses; the rest is the machine's own time.
    in_dynamo: float = 0.0
    paused: float = 0.0

    @property
    def own(self) -> float:
        """Machine seconds of the call that were neither a DynamoDB call nor a pause: the service's Python, and
        its wait for a core and the GIL. On AWS the app servers scale out, so this is what the machine adds."""
        return max(0.0, self.seconds - self.in_dynamo - self.paused)


# HOT_TRACE=<file>: every answer of the run with the requests it sent, one JSON object a line (for studying where
# a burst's time goes; the page does not use it).
TRACE_PATH = os.environ.get("HOT_TRACE")
_calls = threading.local()


@contextmanager
def traced(t0_box: list[float]) -> Iterator[None]:
    """Add each DynamoDB request's time to the calling thread's current answer (``_calls.in_dynamo``) and, with
    HOT_TRACE, record it on its trace (``_calls.trace``)."""
    from pynamodb.connection.base import Connection

    original = Connection.dispatch

    def dispatch(self: Connection, operation_name: str, operation_kwargs: dict) -> dict:
        if getattr(_calls, "in_dynamo", None) is None:
            return original(self, operation_name, operation_kwargs)
        started, code = time.monotonic(), ""
        try:
            return original(self, operation_name, operation_kwargs)
        except Exception as error:
            code = (getattr(error, "response", None) or {}).get("Error", {}).get("Code") or type(error).__name__
            raise
        finally:
            took = time.monotonic() - started
            _calls.in_dynamo += took
            if _calls.trace is not None:
                _calls.trace.append((operation_name, started - t0_box[0], took, code))

    Connection.dispatch = dispatch
    try:
        yield
    finally:
        Connection.dispatch = original


def _user(student: int) -> str:
    return f"hot-student-{student:06d}"


def _key(event_id: str, key: str) -> str:
    # The crowd is the same for every design (one seed) and so are its students: without this, the second
    # design's taps would reuse the first design's keys for another event and be refused as "unprocessable".
    return str(uuid.uuid5(uuid.UUID(key), event_id))


def drive(scenario: Scenario, event_id: str, design: SeatDesign) -> tuple[list[Answer], float]:
    """Release every tap at its time (open loop) onto the pool; return the answers and the machine seconds the
    whole run took (last answer included)."""
    taps = crowd(scenario)
    answers: list[Answer] = []
    lock = threading.Lock()

    def scaled_sleep(seconds: float) -> None:
        started = time.monotonic()
        time.sleep(seconds * scenario.scale)
        _calls.paused += time.monotonic() - started

    def call(tap: Tap, t0: float) -> None:
        started = time.monotonic()
        user = _user(tap.student)
        status = position = None
        _calls.trace = [] if TRACE_PATH else None
        _calls.in_dynamo, _calls.paused = 0.0, 0.0
        try:
            outcome = design.register(event_id=event_id, user_id=user, idempotency_key=_key(event_id, tap.key),
                                      fingerprint=registration_fingerprint(event_id=event_id, user_id=user),
                                      user_name=user, sleep=scaled_sleep)
            result = outcome.kind
            body = outcome.data
            # A join's answer names its count an upper bound; an "already registered" answer reads the exact one.
            status, position = body.get("status"), body.get("position_at_most", body.get("position"))
        except RegistrationError as error:
            result = "busy" if error.code == "busy" else f"error: {error.code}"
        except Exception as error:  # noqa: BLE001 - a 500 in the API: counted, never hidden
            result = f"error: {type(error).__name__}"
        ended = time.monotonic()
        with lock:
            answers.append(Answer(tap, started - t0 - tap.at, started - t0, ended - started, result, status,
                                  position, _calls.trace or [], _calls.in_dynamo, _calls.paused))
        _calls.in_dynamo = None

    t0_box: list[float] = []
    with traced(t0_box):
        seconds = release_open_loop(taps, call, threads=scenario.threads, name="hot", t0_box=t0_box)
    return answers, seconds


def release_open_loop(arrivals: list[Any], call: Callable[[Any, float], None], *, threads: int, name: str,
                      t0_box: list[float]) -> float:
    """Hand each arrival (anything with ``at``, machine seconds after t0) to ``call(arrival, t0)`` at its time,
    whatever the earlier answers (open loop). t0 goes into ``t0_box`` as the clock starts. Returns the machine
    seconds from t0 to the last answer."""
    # The workers are started before the first arrival and wait on a queue: starting a thread on demand waits for
    # it to get the GIL, and on a busy machine that stalled the scheduler itself (not the workers) for seconds.
    work: queue.SimpleQueue[Any] = queue.SimpleQueue()
    done = object()

    def worker() -> None:
        while (arrival := work.get()) is not done:
            call(arrival, t0_box[0])

    pool = [threading.Thread(target=worker, name=f"{name}-{i}", daemon=True)
            for i in range(min(threads, len(arrivals)))]
    for thread in pool:
        thread.start()
    t0_box.append(time.monotonic() + 0.5)
    t0 = t0_box[0]
    for arrival in arrivals:
        delay = t0 + arrival.at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        work.put(arrival)
    for _ in pool:
        work.put(done)
    for thread in pool:
        thread.join()
    return time.monotonic() - t0


# --- what the table says afterwards -----------------------------------------------------------------------------

def _event_registrations(event_id: str) -> list[dict[str, Any]]:
    """The event-side registration copies, as plain dicts."""
    return [{"user_id": r.user_id, "status": r.status} for r in selectors.event_registrations(event_id=event_id)]


def _claims(event_id: str, users: set[str]) -> list[RegistrationClaim]:
    """The event's claims of ``users``: they live in each student's partition (one BatchGetItem per 100)."""
    return list(RegistrationClaim.batch_get([RegistrationClaim.key_for(event_id, user) for user in sorted(users)]))


def audit(event_id: str, capacity: int, answers: list[Answer]) -> dict[str, Any]:
    """Duplicates, oversell, the confirmed count and the waiting list's order, read from the event's items."""
    registrations = _event_registrations(event_id)
    live = [item for item in registrations if item.get("status") in (CONFIRMED, WAITLISTED)]
    per_user = Counter(item["user_id"] for item in live)
    claims = _claims(event_id, set(per_user) | {_user(answer.tap.student) for answer in answers})
    # The waiting list's entries live in its lanes' partitions (registrations.seating.lanes), read by the selector.
    entries = [{"user_id": e.user_id, "ticket": int(e.ticket)}
               for e in selectors.waitlist_entries(event_id=event_id)]
    exact = positions.positions(tickets=[(event_id, item["ticket"]) for item in entries])
    confirmed = sum(1 for item in live if item["status"] == CONFIRMED)
    waitlisted = [item for item in live if item["status"] == WAITLISTED]
    tickets = [int(item["ticket"]) for item in entries]
    first_arrival = {}
    for answer in answers:
        user = _user(answer.tap.student)
        first_arrival[user] = min(first_arrival.get(user, answer.tap.at), answer.tap.at)
    # FIFO: in ticket order, how often a student arrived before one holding an earlier ticket, and by how much
    by_ticket = [first_arrival.get(item["user_id"], 0.0) for item in entries]
    inversions, latest, overtaken_by = 0, float("-inf"), 0.0
    for arrived in by_ticket:
        if arrived < latest:
            inversions += 1
            overtaken_by = max(overtaken_by, latest - arrived)
        latest = max(latest, arrived)
    confirmed_users = {item["user_id"] for item in live if item["status"] == CONFIRMED}
    last_confirmed = max((first_arrival.get(user, 0.0) for user in confirmed_users), default=0.0)
    first_waiting = min(by_ticket, default=float("inf"))
    created_positions = {(a.position, _user(a.tap.student)) for a in answers
                         if a.outcome == "created" and a.status == WAITLISTED}
    ticket_of = {item["user_id"]: int(item["ticket"]) for item in entries}
    rank = {item["user_id"]: n for n, item in enumerate(entries, start=1)}
    registered_students = len(per_user)
    return {
        "confirmed": confirmed,
        "waitlisted": len(waitlisted),
        "students_registered": registered_students,
        "claims": len(claims),
        "duplicates": sum(1 for n in per_user.values() if n > 1),
        "oversell": max(0, confirmed - capacity),
        "seats_taken": shards.event_seat_counts(event_id).registered,
        "expected_confirmed": min(capacity, registered_students),
        "tickets_unique": len(set(tickets)) == len(tickets),
        "tickets": len(tickets),
        "entries_match": sorted(ticket_of) == sorted(item["user_id"] for item in waitlisted),
        # Exact on read: each waiting student's position is the rank of their ticket.
        "positions_exact": [exact[(event_id, t)] for t in tickets] == list(range(1, len(tickets) + 1)),
        # What each answer said, against that rank afterwards (answers are as of the join; see the docs).
        "answers_off_by": max((abs(position - rank[user]) for position, user in created_positions if user in rank),
                              default=0),
        "fifo_inversions": inversions,
        "fifo_overtaken_by_s": overtaken_by,
        "confirmed_after_first_waiting": sum(1 for user in confirmed_users if first_arrival.get(user, 0.0)
                                             > first_waiting),
        "last_confirmed_arrival": last_confirmed,
    }


# --- one design, measured ---------------------------------------------------------------------------------------

@dataclass
class DesignResult:
    name: str
    missing: str | None = None
    answers: list[Answer] = field(default_factory=list)
    machine_seconds: float = 0.0
    model: dict[str, Any] = field(default_factory=dict)
    table: dict[str, Any] = field(default_factory=dict)
    event_id: str = ""
    transactions: Counter = field(default_factory=Counter)


# --- what the service's transactions did -------------------------------------------------------------------------

def _kind(labels: set[str]) -> str:
    """A registration's transaction by its labels (registrations.write_rules): a seat attempt or a join of
    one lane."""
    if "seat" in labels:
        return "seat"
    if "lane" in labels:
        return "lane join"
    return "other"


def _item_of(label: str) -> str:
    if label == "seat":
        return "the seat's item"  # a shard, or the single counter's event item
    if label == "lane":
        return "a shard"
    return {"event": "the event's item", "queue": "the queue item"}.get(label, label.split("_")[0])


def _throttled(code: str) -> str:
    return "" if code == TRANSACTION_CONFLICT else " (throttled)"


@contextmanager
def tallied(counts: Counter) -> Iterator[None]:
    """Count every transaction of the run by kind, by what became of it (committed, refused by a condition,
    conflicted, and on which item) and by whether the waiting list's gate was closed yet (the first close that
    lands closes it), and the single writes that close the gate, copy it into a lane and claim a block. Spies on
    commit and on those writes, like the tests' ``cancellations``: the service is not touched."""
    original = LabelledTransaction.commit
    closed, lock = threading.Event(), threading.Lock()

    def count(*keys: tuple[str, str, str]) -> None:
        with lock:  # the workers commit from many threads: a Counter's += is not atomic
            counts.update(keys)

    def spy(self: LabelledTransaction) -> Any:
        kind, phase = _kind(self._labels), "after" if closed.is_set() else "before"
        try:
            result = original(self)
        except TransactionCancelled as cancelled:
            if cancelled.is_conflict:
                count((kind, phase, "conflicted"), *((kind, phase, f"on {_item_of(label)}{_throttled(reason.code)}")
                                                     for label, reason in cancelled.reasons.items()
                                                     if reason.code in TRANSIENT_REASONS))
            else:
                count((kind, phase, "refused"))
            raise
        count((kind, phase, "committed"))
        return result

    def single_write(kind: str, write: Callable[..., bool]) -> Callable[..., bool]:
        # The gate's close and its copy into a lane: one UpdateItem each, True if it landed.
        def spied(**kwargs: Any) -> bool:
            phase = "after" if closed.is_set() else "before"
            try:
                done = write(**kwargs)
            except GateBusy:
                count((kind, phase, "conflicted"))
                raise
            count((kind, phase, "committed" if done else "refused"))
            if done and kind == "gate close":
                closed.set()
            return done
        return spied

    claim = lanes.claim_block

    def claim_spy(**kwargs: Any) -> lanes.Block:
        # A lane's new block: one UpdateItem of the queue item, outside any transaction (whatever the gate).
        phase = "any"
        try:
            block = claim(**kwargs)
        except lanes.QueueBusy:
            count(("block claim", phase, "conflicted"))
            raise
        count(("block claim", phase, "committed" if block.claimed else "refused"))
        return block

    close, copy = router.gate_close, router.lane_copy
    LabelledTransaction.commit = spy
    lanes.claim_block = claim_spy
    router.gate_close = single_write("gate close", close)
    router.lane_copy = single_write("lane copy", copy)
    try:
        yield
    finally:
        LabelledTransaction.commit = original
        lanes.claim_block = claim
        router.gate_close, router.lane_copy = close, copy


def run_hot(design: str, scenario: Scenario, *, direct: TableConfig, model: ModelProcess) -> DesignResult:
    """One design's run: its event created directly, the crowd through the model, the audit directly again."""
    seat_design = SEAT_DESIGNS[design]
    missing = seat_design.missing()
    if missing:
        return DesignResult(design, missing=missing)
    configure_models(direct)
    event_id = seat_design.create_event(scenario.run_capacity)
    # The students' view of the event page before the opening: the process reads the event, as every app server
    # serving that page does, and so knows its shard count (registrations.seating.shards.seat_counts).
    selectors.seats_for(event=selectors.event_get(event_id=event_id))
    through = TableConfig(direct.table_name, model.endpoint, direct.region)
    configure_models(through)
    ready_clients()
    model.reset()
    try:
        counts: Counter = Counter()
        with tallied(counts):
            answers, seconds = drive(scenario, event_id, seat_design)
        report = model.report(top=5)
    finally:
        configure_models(direct)
    table = audit(event_id, scenario.run_capacity, answers)
    if TRACE_PATH:
        Path(f"{TRACE_PATH}.{design.replace(' ', '-')}.model.json").write_text(json.dumps(model.report()))
        with open(TRACE_PATH, "a") as trace:
            for answer in answers:
                trace.write(json.dumps({"design": design, "at": answer.tap.at, "kind": answer.tap.kind,
                                        "student": answer.tap.student, "started": answer.started,
                                        "seconds": answer.seconds, "outcome": answer.outcome,
                                        "status": answer.status, "trace": answer.trace}) + "\n")
    return DesignResult(design, answers=answers, machine_seconds=seconds, model=report, table=table,
                        event_id=event_id, transactions=counts)


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def summary(result: DesignResult, scenario: Scenario) -> dict[str, Any]:
    """The numbers of the report, converted back to real scale where they are rates or times."""
    answers, s = result.answers, scenario.scale
    outcomes = Counter(answer.outcome for answer in answers)
    created = [a for a in answers if a.outcome == "created"]
    # From the first arrival to the last accepted answer (or the last arrival, if later): a design that answers
    # slower than the crowd arrives is measured at the rate it really accepted, not at the arrival rate.
    span = max([scenario.machine_seconds] + [a.started + a.seconds for a in created]) or 1e-9
    busy_students = {a.tap.student for a in answers if a.outcome == "busy"}
    errors = {name: n for name, n in outcomes.items() if name.startswith("error")}
    lags = [a.lag for a in answers]
    starts = [a.started for a in answers]
    hottest = (result.model.get("partitions") or [{}])[0]
    return {
        "requests": len(answers),
        "outcomes": dict(outcomes),
        "created": len(created),
        "accepted_per_s": len(created) / span * s,
        "accepted_per_s_peak": max(timeline(result, scenario) or [0.0]),
        "accepted_per_s_sustained": sustained(result, scenario),
        "arrival_quarters": arrival_quarters(result, scenario),
        "offered_per_s": len(answers) / max(scenario.machine_seconds, 1e-9) * s,
        # what really reached the service: requests over the span of their actual starts
        "reached_per_s": len(answers) / max(max(starts, default=0.0) - min(starts, default=0.0), 1e-9) * s,
        "busy_share_requests": outcomes["busy"] / max(len(answers), 1),
        "busy_share_students": len(busy_students) / scenario.run_students,
        "errors": errors,
        "p50_ms": _percentile([a.seconds for a in answers], 0.50) / s * 1000,
        "p99_ms": _percentile([a.seconds for a in answers], 0.99) / s * 1000,
        "lag_p99_ms": _percentile(lags, 0.99) * 1000,
        "lag_max_ms": max(lags or [0.0]) * 1000,
        "lag_growing": _lag_growing(answers, scenario),
        "hottest": hottest.get("scope", "-"),
        "hottest_peak": hottest.get("peak_wcu_per_s_at_scale", 0.0),
        "hottest_limit": hottest.get("aws_limit_wcu_per_s", 0.0),
        "tables": result.model.get("tables", []),
        "over_limit": [row["scope"] for row in result.model.get("partitions", [])
                       if row.get("peak_wcu_1s", 0) > row.get("limit_wcu_1s", float("inf")) + 1e-6],
        "throttles": result.model.get("throttles", 0),
        "conflicts": result.model.get("conflicts", 0),
        "in_flight": result.model.get("transaction_in_flight_ms", {}),
        "conflicted_kinds": result.model.get("conflicted_items_by_kind", {}),
        "busy_by_fifth": _busy_by_fifth(answers),
        "time_split": _time_split(created, s),
        "machine_seconds": result.machine_seconds,
    }


def _time_split(created: list[Answer], scale: float) -> dict[str, tuple[float, float, float, float]]:
    """Per status of the registrations created: the mean real ms of a request in DynamoDB calls, in pauses and of
    the machine's own, and the 90th percentile of the machine's own."""
    split = {}
    for status in (CONFIRMED, WAITLISTED):
        answers = [a for a in created if a.status == status]
        if answers:
            split[status] = (*(sum(part) / len(answers) / scale * 1000 for part in zip(
                *((a.in_dynamo, a.paused, a.own) for a in answers), strict=True)),
                _percentile([a.own for a in answers], 0.90) / scale * 1000)
    return split


def tally(counts: Counter, kind: str, phase: str) -> str:
    done = [counts[(kind, phase, outcome)] for outcome in ("committed", "refused", "conflicted")]
    if not any(done):
        return "-"
    on = sorted(((key[2][3:], n) for key, n in counts.items() if key[:2] == (kind, phase)
                 and key[2].startswith("on ")), key=lambda pair: -pair[1])
    where = ", ".join(f"{item} {n:,}" for item, n in on[:4])
    return " / ".join(f"{n:,}" for n in done) + (f" ({where})" if where else "")


def _busy_by_fifth(answers: list[Answer]) -> list[float]:
    """The share of students answered 503 among those whose first tap came in each fifth of the arrivals: where
    in the burst the design runs out of room to retry."""
    first: dict[int, float] = {}
    for answer in answers:
        first[answer.tap.student] = min(first.get(answer.tap.student, answer.tap.at), answer.tap.at)
    busy = {answer.tap.student for answer in answers if answer.outcome == "busy"}
    ordered = sorted(first, key=first.__getitem__)
    fifths = [ordered[len(ordered) * i // 5:len(ordered) * (i + 1) // 5] for i in range(5)]
    return [sum(student in busy for student in fifth) / max(len(fifth), 1) for fifth in fifths]


def _lag_growing(answers: list[Answer], scenario: Scenario) -> bool:
    """Whether the scheduler fell behind: the last tenth of the arrivals started later than the first by more
    than a quarter of a (scaled) hold, 2.5 ms of real time whatever S (it was a fixed 50 ms of machine time,
    which is 2.5 ms only at S = 20: at S = 240 it flagged 0.2 ms)."""
    ordered = sorted(answers, key=lambda a: a.tap.at)
    tenth = max(1, len(ordered) // 10)
    early = statistics.median(a.lag for a in ordered[:tenth]) if ordered else 0.0
    late = statistics.median(a.lag for a in ordered[-tenth:]) if ordered else 0.0
    return late - early > 0.25 * scenario.hold_ms / 1000 * scenario.scale


def timeline(result: DesignResult, scenario: Scenario) -> list[float]:
    """Accepted registrations per real second, per bucket of 1/BUCKETS_PER_REAL_SECOND real seconds, by the time
    their answer came back."""
    bucket = scenario.scale / BUCKETS_PER_REAL_SECOND  # machine seconds per bucket
    ends = [a.started + a.seconds for a in result.answers if a.outcome == "created"]
    if not ends:
        return []
    counts = Counter(int(end // bucket) for end in ends)
    return [counts[i] * BUCKETS_PER_REAL_SECOND for i in range(max(counts) + 1)]


def arrival_quarters(result: DesignResult, scenario: Scenario) -> list[float]:
    """The chart's rates for the buckets that lie wholly inside the arrival window (a quarter with no answer is
    a rate of 0)."""
    whole = int(scenario.machine_seconds // (scenario.scale / BUCKETS_PER_REAL_SECOND) + 1e-9)
    return (timeline(result, scenario) + [0.0] * whole)[:whole]


def sustained(result: DesignResult, scenario: Scenario) -> float | None:
    """The lowest rate of the chart's buckets that lie wholly inside the arrival window: what the design kept up
    while the crowd kept coming. None when the window holds fewer than two whole buckets (K too large for the run
    to say anything sustained: at K = 20 the crowd arrives in a quarter of a real second)."""
    quarters = arrival_quarters(result, scenario)
    return min(quarters) if len(quarters) >= 2 else None


# --- the page ---------------------------------------------------------------------------------------------------

def chart(results: list[DesignResult], scenario: Scenario) -> str:
    """A hand-written SVG: accepted registrations per real second over (real) time, one line per design, and the
    students' arrival rate for reference."""
    series = [(result.name, timeline(result, scenario)) for result in results if not result.missing]
    width, height, left, top, right, bottom = 720, 320, 70, 20, 230, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    longest = max([len(points) for _, points in series] + [1])
    top_rate = max([max(points or [0]) for _, points in series] + [scenario.real_rate, TARGET_PER_S]) * 1.15
    colours = ["#d1242f", "#1f6feb", "#8250df", "#bf3989"]

    def x(index: float) -> float:
        return left + plot_w * index / max(longest, 1)

    def y(rate: float) -> float:
        return top + plot_h * (1 - rate / top_rate)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" font-family="sans-serif" font-size="11">',
             "<title>Accepted registrations per second over time, per seat design</title>",
             f'<rect width="{width}" height="{height}" fill="#fff"/>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#888"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#888"/>',
             f'<text x="14" y="{top + plot_h / 2}" transform="rotate(-90 14 {top + plot_h / 2})" '
             'text-anchor="middle">accepted registrations/s (real)</text>',
             f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">real seconds since the first '
             'arrival</text>']
    for step in range(5):
        value = top_rate * step / 4
        parts.append(f'<text x="{left - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value:,.0f}</text>')
        parts.append(f'<line x1="{left}" y1="{y(value):.1f}" x2="{left + plot_w}" y2="{y(value):.1f}" '
                     'stroke="#eee"/>')
    for second in range(int(longest / BUCKETS_PER_REAL_SECOND) + 1):
        px = x(second * BUCKETS_PER_REAL_SECOND)
        parts.append(f'<text x="{px:.1f}" y="{top + plot_h + 14}" text-anchor="middle">{second}</text>')
    arrival_end = x(min(longest, scenario.arrival_seconds / scenario.crowd * BUCKETS_PER_REAL_SECOND))
    parts.append(f'<line x1="{left}" y1="{y(scenario.real_rate):.1f}" x2="{arrival_end:.1f}" '
                 f'y2="{y(scenario.real_rate):.1f}" stroke="#57606a" stroke-dasharray="4 3"/>')
    # One seat item admits one transaction per hold time: the single counter's ceiling, whatever its WCU.
    ceiling = 1000 / scenario.hold_ms
    parts.append(f'<line x1="{left}" y1="{y(ceiling):.1f}" x2="{left + plot_w}" y2="{y(ceiling):.1f}" '
                 'stroke="#9a6700" stroke-dasharray="2 3"/>')
    parts.append(f'<line x1="{left}" y1="{y(TARGET_PER_S):.1f}" x2="{left + plot_w}" y2="{y(TARGET_PER_S):.1f}" '
                 'stroke="#1a7f37" stroke-dasharray="6 3"/>')
    legend = [(f"issue 13's target, {TARGET_PER_S:,}/s", "#1a7f37"),
              (f"students arriving/s (for {scenario.arrival_seconds / scenario.crowd:g} s)", "#57606a"),
              (f"1 item, 1 tx per {scenario.hold_ms:g} ms hold", "#9a6700")]
    for index, (name, points) in enumerate(series):
        colour = colours[index % len(colours)]
        legend.append((name, colour))
        coords = " ".join(f"{x(i + 0.5):.1f},{y(rate):.1f}" for i, rate in enumerate(points))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{coords}"/>')
    for index, (name, colour) in enumerate(legend):
        legend_y = top + 16 * index + 6
        parts.append(f'<rect x="{width - right + 14}" y="{legend_y - 8}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{width - right + 30}" y="{legend_y + 1}">{name}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


HOW_TO_READ = """How the run is made and what the rows mean:

- **Open loop.** A scheduler releases request i at t0 + t_i onto worker threads started beforehand, whatever the
  answers; *scheduler lag* is each request's actual start minus its scheduled one. If it grows (**yes** in the
  last row), the machine could not offer the load: fewer requests per second reached the service than the rows
  say, which flatters the design. Requests call `registrations.services.registration_create` in process (what
  `POST /api/events/<id>/registrations` calls; two cores cannot push this through HTTP); its `busy` error is the
  API's 503, anything else escaping would be a 500 (*other errors*). The service no longer draws the ticket's QR
  code (it is drawn on read); the bench still stubs a read-side drawing out of the way (`HOT_REAL_QR=1` does not).
- **A request's time** is split three ways: inside DynamoDB calls (the model's hold, DynamoDB Local, the proxy,
  botocore's own retries), in the service's pauses, and the rest, the machine's own (the service's Python and its
  wait for a core and the GIL among thousands of threads). On AWS the app servers scale out and that part is a
  millisecond or two; here each machine second of it counts as 1/S real second, and while a request sits in it
  the images it read grow stale, so when it grows the machine, not the design, is costing refusals and conflicts.
- **Scale model.** S divides every AWS limit and multiplies every duration (hold time, arrival spacing, double-tap
  delay, the service's retry pauses) so one machine second stands for 1/S real second; K divides students and
  seats at the same arrival rate. Rates are x S, latencies / S; counts are of the / K crowd (x K for the real
  crowd); WCU/s are the capacity model's own conversion at scale. A latency includes any scheduler lag / S.
- **Accepted registrations/s**: first registrations created (confirmed or waitlisted) per real second, from the
  first arrival to the last accepted answer (the tail of the last answers counts against it, so a short crowd
  reads low); *best 1/4 s* is the highest quarter-second of the chart; *sustained* the lowest quarter-second
  that lies wholly inside the arrival window, what the issue's "sustained" asks (none when the window holds
  fewer than two: at K = 20 the crowd arrives within a quarter of a second, so only a smaller K can show it).
- **Hottest partition**: the partition key with the highest peak in any 1 s window against its limit, from
  `CapacityModel.report()`; *above their limit* counts partitions whose peak exceeded it (the model admits a
  request on an estimate, so a peak can run over). Throttles and conflicts are requests the model refused.
- **The service's writes**, counted by spies: *seat attempts* (a transaction on one seat of one shard), *gate
  closes* (after reading the gate and every shard full, one UpdateItem of the gate under the epoch read;
  refused when a seat was freed since or someone closed it first), *lane copies* (one UpdateItem putting the
  closed gate on a lane; refused when the lane had it already), *lane joins* (a transaction on one lane: a
  ticket, maybe installing a block), before and after the first close landed, and *block claims* (one
  UpdateItem of the queue item, before the lane join that installs the block: claimed, or found one pending
  and installed it instead); each committed, refused by a condition (the image then says where to go), or
  conflicted or throttled (retried after a pause; a student who meets 12 is answered 503), with the items the
  transactions' conflicts were on (a transaction may meet several).
- **From the table afterwards** (strongly consistent Query of the event's items, then `tems.invariants` over the
  whole table): duplicates are students with more than one live registration; oversell is confirmed over
  capacity; confirmed should be min(capacity, students who got a registration), and min(capacity, all students)
  only if nobody was turned away with a 503. FIFO: waitlist tickets must be unique, each entry match a
  waitlisted registration, and each waiting student's position read afterwards equal the rank of their ticket
  (exact on read); an answer's position is as of its join (a lane's block is a second old at most, so it can be
  a little high), and the row says by how much at most; *out of arrival order* counts
  tickets held by a student who arrived (first tap) before someone with an earlier ticket, and by how much: with
  concurrent requests, order is commit order, so a few ms of overtaking is expected; seconds mean a student's
  retries lost a lottery. *Confirmed who arrived after the first waitlisted* counts the same unfairness between
  seats and the waiting list."""


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def section(results: list[DesignResult], scenario: Scenario, invariants: dict[str, list[str]],
            seconds: float) -> str:
    s, k = scenario.scale, scenario.crowd
    measured = [(result, summary(result, scenario)) for result in results if not result.missing]
    lines = [
        f"## Hot event at a {scenario.hold_ms:g} ms hold: one {scenario.capacity:,}-seat event, "
        f"{scenario.students:,} students in {scenario.arrival_seconds:g} s",
        "",
        f"Written by `make bench-hot` (`tests/bench/hot.py`) on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
        f" **Scale: S = {s:g}, K = {k:g}, hold {scenario.hold_ms:g} ms** (x S = {scenario.hold_ms * s:g} ms on the "
        f"machine); **table ceiling {TABLE_WCU:,.0f} WCU/s, {TABLE_RCU:,.0f} RCU/s** (a table pre-warmed to AWS's "
        "default per-table quota; an on-demand table starts at 4,000 WCU/s, ~300 registrations/s for the whole "
        "table). Every partition: 1,000 WCU/s, 3,000 RCU/s. "
        f"The crowd: {scenario.students:,} students for {scenario.capacity:,} seats arriving at a fixed "
        f"{scenario.real_rate:,.0f}/s (open loop"
        # The crowd arrives over 10 s, 1,200/s: fewer than the 2,000/s its bar asks to sustain.
        + (f"; the issue's {ARRIVAL_SECONDS:g} s would offer {scenario.students / ARRIVAL_SECONDS:,.0f}/s, fewer than "
           f"the {TARGET_PER_S:,}/s to sustain, so the same crowd comes in {scenario.arrival_seconds:g} s"
           if scenario.arrival_seconds < ARRIVAL_SECONDS else "")
        + f"), {DOUBLE_TAP_SHARE:.0%} double-tapping with a fresh key "
        f"{SECOND_TAP_MS[0]:g}-{SECOND_TAP_MS[1]:g} ms later, {SAME_KEY_RETRY_SHARE:.0%} retrying with the same key. "
        f"Run as {scenario.run_students:,} students for {scenario.run_capacity:,} seats (÷ K) at "
        f"{scenario.machine_rate:.0f} arrivals per machine second (÷ S), {scenario.machine_seconds:.0f} s per design,"
        " through the capacity model, calling `registration_create` in process. Rates below are x S (real), "
        "latencies ÷ S (real), WCU/s as the model reports them at scale; counts are of the ÷ K crowd.",
        "",
    ]
    for result in results:
        if result.missing:
            lines += [f"**{result.name}**: {result.missing}. No numbers are shown for it.", ""]
    lines += [
        "| | " + " | ".join(result.name for result, _ in measured) + " |",
        "| --- | " + " | ".join("---:" for _ in measured) + " |",
    ]

    def row(label: str, render: Callable[[DesignResult, dict[str, Any]], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(render(result, numbers) for result, numbers in measured) + " |")

    row("requests (first taps + second taps)", lambda r, n: f"{n['requests']:,}")
    row("requests/s scheduled / reaching the service (real)",
        lambda r, n: f"{n['offered_per_s']:,.0f} / {n['reached_per_s']:,.0f}")
    row("accepted registrations/s (real; first arrival to last accepted answer)",
        lambda r, n: f"{n['accepted_per_s']:,.0f}")
    row(f"accepted registrations/s, best 1/{BUCKETS_PER_REAL_SECOND} s",
        lambda r, n: f"{n['accepted_per_s_peak']:,.0f}")
    row(f"accepted registrations/s sustained (lowest whole 1/{BUCKETS_PER_REAL_SECOND} s while the crowd arrives)",
        lambda r, n: "-" if n["accepted_per_s_sustained"] is None else f"{n['accepted_per_s_sustained']:,.0f}")
    row(f"... each whole 1/{BUCKETS_PER_REAL_SECOND} s of the arrivals",
        lambda r, n: " / ".join(f"{rate:,.0f}" for rate in n["arrival_quarters"]) or "-")
    row("students answered 503 at least once", lambda r, n: f"{n['busy_share_students']:.1%}")
    row("requests answered 503", lambda r, n: f"{n['busy_share_requests']:.1%}")
    row("other errors (would be 500)", lambda r, n: ", ".join(f"{e} {c}" for e, c in n["errors"].items()) or "0")
    row("answers: created / already registered / replayed", lambda r, n: " / ".join(
        str(n["outcomes"].get(kind, 0)) for kind in ("created", "already_registered", "replayed")))
    row("p50 / p99 latency ms (real)", lambda r, n: f"{n['p50_ms']:,.0f} / {n['p99_ms']:,.0f}")
    row("hottest partition", lambda r, n: f"`{n['hottest'].split('|', 1)[-1]}`")
    row("its peak WCU/s vs limit (at scale)", lambda r, n: f"{n['hottest_peak']:,.0f} / {n['hottest_limit']:,.0f}")
    row("partitions above their limit", lambda r, n: str(len(n["over_limit"])))
    row("the table and its indexes: peak WCU/s, RCU/s vs ceiling (at scale)", lambda r, n: "; ".join(
        f"{t['scope'].rsplit('_', 1)[-1]} {t.get('peak_wcu_per_s_at_scale', 0):,.0f} / "
        f"{t.get('aws_limit_wcu_per_s', 0):,.0f}, {t.get('peak_rcu_per_s_at_scale', 0):,.0f} / "
        f"{t.get('aws_limit_rcu_per_s', 0):,.0f}" for t in n["tables"]) or "-")
    row("throttles / conflicts (requests refused by the model)",
        lambda r, n: f"{n['throttles']:,} / {n['conflicts']:,}")
    row("conflicts met, by item (a transaction may meet several)", lambda r, n: ", ".join(
        f"{kind} {count:,}" for kind, count in list(n["conflicted_kinds"].items())[:4]) or "-")
    row("students answered 503, by fifth of the arrivals", lambda r, n: " / ".join(
        f"{share:.0%}" for share in n["busy_by_fifth"]))
    for kind, name in (("seat", "seat attempts"), ("gate close", "gate closes (one UpdateItem)"),
                       ("lane copy", "lane copies of the gate (one UpdateItem)"), ("lane join", "lane joins")):
        for phase in ("before", "after"):
            row(f"{name} {phase} the gate closed: committed / refused / conflicted or throttled (on)",
                lambda r, n, kind=kind, phase=phase: tally(r.transactions, kind, phase))
    row("block claims (one UpdateItem of the queue item): claimed / found one pending / conflicted or throttled",
        lambda r, n: tally(r.transactions, "block claim", "any"))
    row("transaction in DynamoDB Local p50 / p99 ms (machine)", lambda r, n: "{} / {}".format(
        n["in_flight"].get("p50", "-"), n["in_flight"].get("p99", "-")))
    row("duplicates (students with > 1 live registration)", lambda r, n: str(r.table["duplicates"]))
    row("oversell (confirmed over capacity)", lambda r, n: str(r.table["oversell"]))
    row("confirmed (expected min(capacity, students registered))",
        lambda r, n: f"{r.table['confirmed']:,} ({r.table['expected_confirmed']:,}) "
                     f"{_yes(r.table['confirmed'] == r.table['expected_confirmed'])}")
    row("confirmed = min(capacity, all students)",
        lambda r, n: _yes(r.table["confirmed"] == min(scenario.run_capacity, scenario.run_students)))
    row("waitlisted / tickets unique / entries match", lambda r, n: f"{r.table['waitlisted']:,} / "
        f"{_yes(r.table['tickets_unique'])} / {_yes(r.table['entries_match'])}")
    row("positions exact on read / answers off by at most", lambda r, n: f"{_yes(r.table['positions_exact'])} / "
        f"{r.table['answers_off_by']}")
    row("FIFO: tickets out of arrival order / by at most ms (real)",
        lambda r, n: f"{r.table['fifo_inversions']} / {r.table['fifo_overtaken_by_s'] / s * 1000:,.0f}")
    row("confirmed who arrived after the first waitlisted",
        lambda r, n: str(r.table["confirmed_after_first_waiting"]))
    row("a request's time, mean ms (real): in DynamoDB calls / paused / the machine's own (p90): confirmed; "
        "waitlisted", lambda r, n: "; ".join(
            f"{in_dynamo:,.0f} / {paused:,.0f} / {own:,.1f} ({own_p90:,.1f})"
            for in_dynamo, paused, own, own_p90 in n["time_split"].values()) or "-")
    row("scheduler lag p99 / max ms (machine); falling behind?",
        lambda r, n: f"{n['lag_p99_ms']:,.0f} / {n['lag_max_ms']:,.0f}; {'**yes**' if n['lag_growing'] else 'no'}")
    lines += ["", HOW_TO_READ]
    problems = [f"{name}: {problem}" for name, found in sorted(invariants.items()) for problem in found]
    lines += [
        "",
        f"![Accepted registrations per second over time, per design]({chart_path(scenario.hold_ms).name})",
        "",
        "`tems.invariants` over the whole table afterwards (all but the outbox's delivery time: no relay runs "
        "here): "
        + ("every check passed." if not problems else f"{len(problems)} problem(s):"),
    ]
    lines += [f"- {problem}" for problem in problems[:20]]
    lines += ["", _reading(measured, scenario), "", f"_Measured in {seconds:.0f} s._"]
    return "\n".join(lines) + "\n"


def _reading(measured: list[tuple[DesignResult, dict[str, Any]]], scenario: Scenario) -> str:
    """The issue's "done when", checked against each measured design."""
    out = ["Against issue 13's bar (≥ 2,000 registrations/s sustained, ≥ 99.5 % of students without a 503, 0 "
           "duplicates, 0 oversell, exactly min(capacity, students) confirmed, FIFO intact, no partition above its "
           "limit)." + (f" Note: {scenario.students:,} students over {scenario.arrival_seconds:g} s arrive at "
                        f"{scenario.real_rate:,.0f}/s, so this crowd cannot show {TARGET_PER_S:,}/s; `HOT_SECONDS=5 "
                        f"make bench-hot` offers {scenario.students / 5:,.0f}/s."
                        if scenario.real_rate < TARGET_PER_S else "")]
    for result, numbers in measured:
        table = result.table
        checks = [
            (f"≥ {TARGET_PER_S:,}/s sustained", (numbers["accepted_per_s_sustained"] or 0) >= TARGET_PER_S),
            ("≥ 99.5 % without 503", numbers["busy_share_students"] <= 0.005),
            ("0 duplicates", table["duplicates"] == 0),
            ("0 oversell", table["oversell"] == 0),
            ("min(capacity, students) confirmed",
             table["confirmed"] == min(scenario.run_capacity, scenario.run_students)),
            ("waitlist tickets unique, matching, positions exact",
             table["tickets_unique"] and table["entries_match"] and table["positions_exact"]),
            ("no partition over its limit", not numbers["over_limit"]),
        ]
        if result.name == "single counter":
            out.append(f"- Why one counter cannot: every registration updates the one seat item, and a transaction "
                       f"holds its items for the hold time ({scenario.hold_ms:g} ms), so the item admits at most "
                       f"{1000 / scenario.hold_ms:,.0f} registrations/s however much WCU its partition has left "
                       f"(here {numbers['hottest_peak']:,.0f} of {numbers['hottest_limit']:,.0f} WCU/s at the peak); "
                       f"the rest meet TransactionConflict ({numbers['conflicts']:,} refused), retry with backoff "
                       f"up to {write_rules.MAX_CONFLICTS} times and are answered 503.")
        passed = [name for name, ok in checks if ok]
        failed = [name for name, ok in checks if not ok]
        out.append(f"- **{result.name}**: meets {', '.join(passed) or 'none'}"
                   + (f"; misses **{', '.join(failed)}**." if failed else "."))
    return "\n".join(out)


def scenario_from_env() -> Scenario:
    return Scenario(arrival_seconds=float(os.environ.get("HOT_SECONDS", ARRIVAL_SECONDS)))


def run_all(ctx: BenchContext, scenario: Scenario, designs: list[str] | None = None) -> tuple[
        list[DesignResult], dict[str, list[str]]]:
    """Every design on one fresh table behind one capacity model; then the invariants over that table."""
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)  # "pool is full" under a burst
    direct = TableConfig(f"tems_hot_{uuid.uuid4().hex[:8]}", ctx.endpoint, ctx.region)
    configure_models(direct)
    ensure_table()
    results = []
    try:
        # A lane's block lives BLOCK_SECONDS of real time: S times longer on the machine, like every duration.
        with (ModelProcess(upstream=ctx.endpoint, scale=scenario.scale, hold_ms=scenario.hold_ms) as model,
              qr_drawn_once(),
              override_settings(WAITLIST_BLOCK_SECONDS=lanes.block_seconds() * scenario.scale)):
            for name in designs or list(SEAT_DESIGNS):
                print(f"  {name}: {scenario.run_students:,} students over {scenario.machine_seconds:.0f} s ...",
                      flush=True)
                results.append(run_hot(name, scenario, direct=direct, model=model))
        configure_models(direct)
        invariants = check_items(scan_items(), names=data_checks()).results
    finally:
        configure_models(direct)
        boto3_client().delete_table(TableName=direct.table_name)
        configure_models(TableConfig(ctx.table_name, ctx.endpoint, ctx.region))
    return results, invariants


def data_checks() -> list[str]:
    """Every registered invariant but the outbox's delivery time: no relay runs here, so in a run longer than
    that time (K = 4 takes half an hour) every message of the first design is "undelivered", which says
    nothing about the data."""
    return [name for name, check in registered_checks().items() if check is not OutboxNotStale]


def run(ctx: BenchContext) -> str:
    started = time.monotonic()
    scenario = scenario_from_env()
    # HOT_DESIGNS=sharded runs one design (a quick look; the page then lacks the side by side).
    chosen = [name.strip() for name in os.environ.get("HOT_DESIGNS", "").split(",") if name.strip()]
    results, invariants = run_all(ctx, scenario, designs=chosen or None)
    chart_path(scenario.hold_ms).write_text(chart(results, scenario))
    section_text = section(results, scenario, invariants, time.monotonic() - started)
    record = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    record[f"{scenario.hold_ms:g}"] = {
        "section": section_text,
        "designs": {result.name: _at_a_glance(numbers, scenario)
                    for result, numbers in ((r, summary(r, scenario)) for r in results if not r.missing)},
    }
    RECORD.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    OUTPUT.write_text(page(record))
    print(f"wrote {OUTPUT}, {RECORD} and {chart_path(scenario.hold_ms)}")
    return section_text


def _at_a_glance(numbers: dict[str, Any], scenario: Scenario) -> dict[str, Any]:
    return {
        "sustained_per_s": round(numbers["accepted_per_s_sustained"] or 0),
        "busy_share_requests": numbers["busy_share_requests"],
        "busy_share_students": numbers["busy_share_students"],
        "p99_ms": round(numbers["p99_ms"]),
        "scale": scenario.scale,
        "crowd": scenario.crowd,
        "falling_behind": bool(numbers["lag_growing"]),
    }


def page(record: dict[str, Any]) -> str:
    """The page of record: one line per hold and design, then each hold's section, shortest hold first."""
    holds = sorted(record, key=float)
    lines = [
        "# TEMS performance: a hot event",
        "",
        "See also [PERFORMANCE.md](PERFORMANCE.md).",
        "",
        "## At a glance",
        "",
        f"The bar: ≥ {TARGET_PER_S:,} registrations/s sustained, 0 duplicates, 0 oversell. Each row is one run of "
        "`make bench-hot` at the hold named (`HOT_HOLD_MS`); its section below has every figure.",
        "",
        "| transaction hold | design | sustained registrations/s | requests answered 503 | students answered 503 "
        "| p99 latency ms | S / K | machine fell behind |",
        "| ---: | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for hold in holds:
        for design, glance in record[hold]["designs"].items():
            lines.append(
                f"| {hold} ms | {design} | {glance['sustained_per_s']:,} | {glance['busy_share_requests']:.1%} | "
                f"{glance['busy_share_students']:.1%} | {glance['p99_ms']:,} | {glance['scale']:g} / "
                f"{glance['crowd']:g} | {'yes' if glance['falling_behind'] else 'no'} |")
    lines.append("")
    return "\n".join(lines) + "\n" + "\n".join(record[hold]["section"] for hold in holds)
