"""``python -m tests.bench offers`` (part of ``make bench-hot``): a wave of cancellations on a full event in offer mode.

The scenario: a 10,000-seat event whose staff chose offers (a freed seat is offered to the head of the waiting
list for ``offer_hours``), full, with 5,000 students waiting; then 2,000 of the seated cancel, at a fixed rate over
one minute. Each cancel is ``registrations.services.registration_cancel`` called as the API view calls it; a
cancel answered 'busy' (the API's 503) taps again after its Retry-After, up to ``TAPS`` taps.

What it shows, read back from the table afterwards: every freed seat was offered exactly once (one Offer item
and one SeatOffered message per cancellation, never two for one student), to the waiting list's head in ticket
order, and no seat sits free while someone waits; from the capacity model: no partition went over its limit.

How it is driven (the same harness as tests/bench/hot.py, whose docstring says why):

- The event is filled directly on DynamoDB Local, through the service (seats first, then the waiting list, one
  student at a time in ticket order), and only the wave goes **through the capacity model**, in its own process.
- **Open loop**: cancel i is released at t0 + t_i whatever the answers, onto a pool of waiting threads.
- **Scale model**, as in the hot bench: with time scale S (``OFFERS_SCALE``) every AWS limit is divided by S and
  every duration multiplied by S (the model's hold and window, the arrival spacing, the service's pauses), and with
  crowd divisor K (``OFFERS_CROWD``) the seats, the waiting list and the cancellations are divided by K over the
  same minute. The defaults are S = 1, K = 1: the issue's numbers in real time, more than the wave, the model and
  DynamoDB Local get from this machine's two cores, so the page of record runs at S = 10. What each S and K
  showed is in docs/journal/ (2026-12-04-offers.md, 2026-12-05-offers-wave.md).
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.test import override_settings

from lab.techniques.registration import registration_fingerprint
from registrations import selectors, services
from registrations.errors import RegistrationError
from registrations.models import CONFIRMED, OFFERED, WAITLISTED, Registration
from registrations.seating import lanes, shards
from tems.dynamo import TableConfig, boto3_client, configure_models, ensure_table
from tems.invariants import check_items, scan_items
from tems.metering import ready_clients
from tests.bench.context import BenchContext
from tests.bench.hot import HOLD_MS, ModelProcess, _event, _percentile, data_checks, release_open_loop

SLOW = True  # minutes (filling 15,000 registrations, then the one-minute wave): ``make bench-hot`` runs it

LINK = ("## Offers: 2,000 cancellations of a full 10,000-seat event with 5,000 waiting\n\n"
        "Measured by `make bench-hot` (minutes, so not part of `make bench`): see "
        "[PERFORMANCE-offers.md](PERFORMANCE-offers.md).")

DOCS = Path(__file__).resolve().parents[2] / "docs"
OUTPUT = DOCS / "PERFORMANCE-offers.md"

CAPACITY = 10_000
WAITING = 5_000
CANCELS = 2_000
WAVE_SECONDS = 60.0
OFFER_HOURS = 24
TAPS = 3  # a cancel answered 'busy' taps again after its Retry-After, up to this many taps in all
FILL_THREADS = 16
SEED = 34


@dataclass(frozen=True)
class Wave:
    capacity: int = CAPACITY
    waiting: int = WAITING
    cancels: int = CANCELS
    seconds: float = WAVE_SECONDS
    scale: float = float(os.environ.get("OFFERS_SCALE", 1))
    crowd: float = float(os.environ.get("OFFERS_CROWD", 1))
    threads: int = 400

    def scaled(self, count: int) -> int:
        return max(1, round(count / self.crowd))

    @property
    def run_capacity(self) -> int:
        return self.scaled(self.capacity)

    @property
    def run_waiting(self) -> int:
        return self.scaled(self.waiting)

    @property
    def run_cancels(self) -> int:
        return self.scaled(self.cancels)

    @property
    def machine_seconds(self) -> float:
        return self.seconds * self.scale


@dataclass
class Cancel:
    user: str
    at: float  # scheduled, machine seconds after t0
    lag: float = 0.0  # how late it started
    seconds: float = 0.0  # from the first tap to the last answer, machine seconds
    outcome: str = ""  # "cancelled" | "busy" | "error: ..."
    taps: int = 0


@dataclass
class WaveResult:
    wave: Wave
    event_id: str
    shard_count: int
    fill_seconds: float
    in_line: list[str]  # the waiting list before the wave, in ticket order
    cancels: list[Cancel]
    machine_seconds: float
    model: dict[str, Any]
    items: list[dict[str, Any]] = field(repr=False, default_factory=list)
    invariants: dict[str, list[str]] = field(default_factory=dict)


def _user(kind: str, n: int) -> str:
    return f"{kind}{n:05d}"


def _register(event_id: str, user: str) -> str:
    outcome = services.registration_create(
        event_id=event_id, user_id=user, user_name=user, idempotency_key=str(uuid.uuid4()),
        fingerprint=registration_fingerprint(event_id=event_id, user_id=user))
    return outcome.data["status"]


def fill(wave: Wave) -> tuple[str, dict[str, str], list[str]]:
    """The full event, made directly on DynamoDB Local: its seats taken (in parallel), then its waiting list joined
    one student at a time, so the line is the order they joined. Returns the event id, seated user -> registration
    id, and the line in ticket order as the service reads it."""
    # The real 10,000-seat event's shard count, whatever K divides the seats by (as the hot bench's "sharded").
    event_id = _event(wave.run_capacity, shards=min(wave.run_capacity, shards.shard_count(CAPACITY)),
                      offer_hours=OFFER_HOURS)
    started = time.monotonic()
    seated_users = [_user("s", n) for n in range(wave.run_capacity)]
    with ThreadPoolExecutor(FILL_THREADS) as pool:
        statuses = Counter(pool.map(lambda user: _register(event_id, user), seated_users))
    if set(statuses) != {CONFIRMED}:
        raise RuntimeError(f"filling the seats answered {dict(statuses)}")
    print(f"  {wave.run_capacity:,} seats taken in {time.monotonic() - started:.0f} s", flush=True)
    started = time.monotonic()
    for n in range(wave.run_waiting):
        if (status := _register(event_id, _user("w", n))) != WAITLISTED:
            raise RuntimeError(f"student {n} joining the waiting list was answered {status}")
        if n % 500 == 499:
            print(f"  {n + 1:,} waiting after {time.monotonic() - started:.0f} s", flush=True)
    seated = {registration.user_id: registration.registration_id
              for registration in selectors.event_registrations(event_id=event_id)
              if registration.status == CONFIRMED}
    in_line = [entry.user_id for entry in selectors.waitlist_entries(event_id=event_id)]
    return event_id, seated, in_line


def schedule(wave: Wave, seated: dict[str, str], *, seed: int = SEED) -> list[Cancel]:
    """Which seated students cancel (a seeded sample), at a fixed rate over the wave's minute (machine time)."""
    leaving = random.Random(seed).sample(sorted(seated), wave.run_cancels)
    spacing = wave.machine_seconds / wave.run_cancels
    return [Cancel(user=user, at=i * spacing) for i, user in enumerate(leaving)]


def drive(wave: Wave, seated: dict[str, str], cancels: list[Cancel]) -> float:
    """Release every cancel at its time onto waiting threads (open loop); fill in each one's answer. Returns the
    machine seconds until the last answer."""
    def scaled_sleep(seconds: float) -> None:
        time.sleep(seconds * wave.scale)

    def call(cancel: Cancel, t0: float) -> None:
        started = time.monotonic()
        cancel.lag = started - t0 - cancel.at
        for tap in range(1, TAPS + 1):
            cancel.taps = tap
            try:
                services.registration_cancel(user_id=cancel.user, registration_id=seated[cancel.user],
                                             sleep=scaled_sleep)
                cancel.outcome = "cancelled"
                break
            except RegistrationError as error:
                if error.code != "busy":
                    cancel.outcome = f"error: {error.code}"
                    break
                cancel.outcome = "busy"
                scaled_sleep(float(error.extra.get("retry_after") or 1))
            except Exception as error:  # noqa: BLE001 - a 500 in the API: counted, never hidden
                cancel.outcome = f"error: {type(error).__name__}"
                break
        cancel.seconds = time.monotonic() - started

    return release_open_loop(cancels, call, threads=wave.threads, name="offers", t0_box=[])


def run_wave(ctx: BenchContext, wave: Wave) -> WaveResult:
    """A fresh table; the event filled directly; the wave through the capacity model; the table read back."""
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    direct = TableConfig(f"tems_offers_{uuid.uuid4().hex[:8]}", ctx.endpoint, ctx.region)
    configure_models(direct)
    ensure_table()
    try:
        started = time.monotonic()
        event_id, seated, in_line = fill(wave)
        fill_seconds = time.monotonic() - started
        selectors.event_get(event_id=event_id)  # the app server knows the event's shard count, as in the hot bench
        cancels = schedule(wave, seated)
        print(f"  filled in {time.monotonic() - started:.0f} s; {len(cancels):,} cancellations over "
              f"{wave.machine_seconds:.0f} s ...", flush=True)
        with (ModelProcess(upstream=ctx.endpoint, scale=wave.scale, hold_ms=HOLD_MS) as model,
              override_settings(WAITLIST_BLOCK_SECONDS=lanes.block_seconds() * wave.scale)):
            configure_models(TableConfig(direct.table_name, model.endpoint, direct.region))
            ready_clients()
            model.reset()
            try:
                seconds = drive(wave, seated, cancels)
                report = model.report(top=5)
            finally:
                configure_models(direct)
        items = list(scan_items())
        invariants = check_items(items, names=data_checks()).results
        return WaveResult(wave, event_id, min(wave.run_capacity, shards.shard_count(CAPACITY)), fill_seconds,
                          in_line, cancels, seconds, report, items, invariants)
    finally:
        configure_models(direct)
        boto3_client().delete_table(TableName=direct.table_name)
        configure_models(TableConfig(ctx.table_name, ctx.endpoint, ctx.region))


def audit(result: WaveResult) -> dict[str, Any]:
    """What the table says: offers and SeatOffered messages per student, who got them, the seats' count."""
    offers = Counter(item["user_id"] for item in result.items if item.get("entity") == "Offer")
    messages = Counter(json.loads(item["payload"])["user"] for item in result.items
                       if item.get("entity") == "OutboxMessage" and item.get("message_type") == "SeatOffered")
    # The user-side copies: one per registration, whatever the event side keeps (entries carry the waitlisted).
    statuses = Counter(item["status"] for item in result.items if item.get("entity") == "Registration"
                       and item["PK"] == Registration.user_pk_for(item["user_id"]))
    cancelled = sum(1 for cancel in result.cancels if cancel.outcome == "cancelled")
    head = result.in_line[:cancelled]
    return {
        "cancelled": cancelled,
        "offers": sum(offers.values()),
        "offer_items_per_student": sorted(set(offers.values())),
        "messages": sum(messages.values()),
        "messages_per_student": sorted(set(messages.values())),
        "offered_are_the_head": sorted(offers) == sorted(head) and sorted(messages) == sorted(head),
        "confirmed": statuses[CONFIRMED],
        "offered": statuses[OFFERED],
        "waiting": statuses[WAITLISTED],
        "open_offers": sum(1 for item in result.items
                           if item.get("entity") == "Offer" and item.get("state") == OFFERED),
    }


def summary(result: WaveResult) -> dict[str, Any]:
    """The numbers of the page, in real time (machine seconds / S)."""
    wave, cancels = result.wave, result.cancels
    done = [cancel for cancel in cancels if cancel.outcome == "cancelled"]
    seconds = sorted(cancel.seconds / wave.scale * 1000 for cancel in done)
    report = result.model
    hottest = report["partitions"][0] if report["partitions"] else {}
    return {
        **audit(result),
        "requested": len(cancels),
        "outcomes": dict(Counter(cancel.outcome for cancel in cancels)),
        "retapped": sum(1 for cancel in cancels if cancel.taps > 1),
        "p50_ms": _percentile(seconds, 0.50),
        "p99_ms": _percentile(seconds, 0.99),
        "lag_p99_ms": _percentile(sorted(cancel.lag / wave.scale * 1000 for cancel in cancels), 0.99),
        "real_seconds": result.machine_seconds / wave.scale,
        "throttles": report["throttles"],
        "conflicts": report["conflicts"],
        "over_limit": [row["scope"] for row in report["partitions"] if row["utilisation"] > 1.0],
        "hottest": hottest,
    }


def _yes(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def section(result: WaveResult) -> str:
    wave, numbers = result.wave, summary(result)
    cancelled = numbers["cancelled"]
    hottest = numbers["hottest"]
    exactly_once = (numbers["offers"] == numbers["messages"] == cancelled
                    and numbers["offer_items_per_student"] in ([1], [])
                    and numbers["messages_per_student"] in ([1], []))
    seats_held = numbers["confirmed"] + numbers["offered"] == wave.run_capacity
    broken = {name: found for name, found in result.invariants.items() if found}
    scale_note = (f"S = {wave.scale:g}, K = {wave.crowd:g}" + ("" if (wave.scale, wave.crowd) == (1, 1) else
                  ": the counts below are of the 1/K crowd, times and rates converted back to real time"))
    rows = [
        ("Event", f"{wave.run_capacity:,} seats on {result.shard_count} seat shards, offer mode "
                  f"({OFFER_HOURS} h), full, {len(result.in_line):,} waiting (filled directly in "
                  f"{result.fill_seconds:.0f} s)"),
        ("Wave", f"{numbers['requested']:,} cancellations at a fixed rate over {wave.seconds:g} s real; answered in "
                 f"{numbers['real_seconds']:.1f} s real; outcomes {numbers['outcomes']}; "
                 f"{numbers['retapped']} tapped again after a 503"),
        ("Freed seats offered", f"{numbers['offers']:,} Offer items, {numbers['messages']:,} SeatOffered messages, "
                                f"for {cancelled:,} cancellations"),
        ("Every freed seat offered exactly once", _yes(exactly_once)),
        ("Offered to the head of the line, in ticket order", _yes(numbers["offered_are_the_head"])),
        ("Seats confirmed + offered = capacity (none free while someone waits, none oversold)",
         f"{_yes(seats_held)} ({numbers['confirmed']:,} + {numbers['offered']:,}; {numbers['waiting']:,} still "
         "waiting)"),
        ("Cancel latency p50 / p99 (real)", f"{numbers['p50_ms']:.0f} ms / {numbers['p99_ms']:.0f} ms"),
        ("Arrival lag p99 (could the machine offer the load?)", f"{numbers['lag_p99_ms']:.0f} ms"),
        ("Throttles / transaction conflicts (capacity model)", f"{numbers['throttles']} / {numbers['conflicts']}"),
        ("Hottest partition, peak of any 1 s (real)",
         f"{hottest.get('scope', '-')}: {hottest.get('peak_wcu_per_s_at_scale', 0):,} WCU/s of "
         f"{hottest.get('aws_limit_wcu_per_s', 0):,}, {hottest.get('peak_rcu_per_s_at_scale', 0):,} RCU/s of "
         f"{hottest.get('aws_limit_rcu_per_s', 0):,} ({hottest.get('utilisation', 0):.0%} of its limit)"),
        ("No partition over its limit", _yes(not numbers["over_limit"]) + (
            f" (over: {', '.join(numbers['over_limit'])})" if numbers["over_limit"] else "")),
        ("Invariants (`check_invariants`) over the table afterwards",
         "clean" if not broken else "; ".join(f"{name}: {found[:3]}" for name, found in broken.items())),
    ]
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    return (f"## Offers: {wave.cancels:,} cancellations of a full {wave.capacity:,}-seat event with "
            f"{wave.waiting:,} waiting\n\n"
            "Offer mode: a freed seat is offered to the head of the waiting list, holding the seat until the "
            "student accepts, declines or the window ends (docs/offers.md). The cancellations go through the "
            "capacity model (AWS's per-partition limits and transaction conflicts, tests/support/capacity_model.py; "
            f"{scale_note}); the event is filled directly on DynamoDB Local. Read back from the table "
            "afterwards.\n\n| | |\n|---|---|\n" + table + "\n")


def run(ctx: BenchContext) -> str:
    result = run_wave(ctx, Wave())
    page = section(result)
    OUTPUT.write_text("# TEMS performance: offers\n\nSee also [PERFORMANCE.md](PERFORMANCE.md) and "
                      "[PERFORMANCE-hot.md](PERFORMANCE-hot.md).\n\n" + page)
    print(f"wrote {OUTPUT}")
    return page
