"""``make bench`` section of the registrations app (``run(ctx)`` is called by ``python -m tests.bench``).

Two measurements, reported together in docs/PERFORMANCE.md:
1. DynamoDB requests of each registration path, per technique (exact: counted in botocore by ``metered()``).
2. Registrations per second and p50/p99 latency through the real HTTP stack (gunicorn + Django + DynamoDB
   Local), next to ``/bench/floor``, a view doing a single PutItem through the same stack: the floor.

The load is bounded (a few hundred requests per phase) so the whole section takes about a minute on 2 cores.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from lab.techniques.registration import TECHNIQUES
from tems.metering import DynamoMeter
from tests.bench.context import BenchContext
from tests.bench.driver import (
    BENCH_PASSWORD,
    BENCH_USER_PREFIX,
    GUNICORN_ARGS,
    bench_event,
    cell,
    gunicorn_server,
    load_phase,
    logged_in_clients,
    measure,
)

CLIENT_THREADS = 8  # concurrent clients; with 2 gunicorn workers x 4 threads the server is the bottleneck
REQUESTS_PER_THREAD = 40  # 320 requests per phase
WARMUP_PER_THREAD = 5

# Best first; names and labels are the lab's (one technique, one name), Powertools' wrapper alone left out as
# it only differs from ``naive`` when taps share a key.
TECHNIQUE_ROWS = ("production", "all_three", "transaction", "claim", "naive")


def run(ctx: BenchContext) -> str:
    started = time.monotonic()
    counts = _technique_counts()
    paths = _tems_path_counts()
    load = _http_load(ctx)
    lines = [
        "## Registrations",
        "",
        "### DynamoDB requests per registration path",
        "",
        "Each cell is the number of requests one call sent (and which). *Replay* repeats the first call's "
        "Idempotency-Key; *already registered* is the same student with a new key.",
        "",
        "| technique | first registration | replay (same key) | already registered (new key) |",
        "| --- | --- | --- | --- |",
    ]
    for name in TECHNIQUE_ROWS:
        first, replay, already = counts[name]
        lines.append(f"| `{name}`: {TECHNIQUES[name].label} | {cell(first)} | {cell(replay)} | {cell(already)} |")
    lines += [
        "",
        "Only TEMS answers a replay with the first response's bytes in one request and never runs the work "
        "twice: claim + transaction rebuilds an answer from the claim, the Powertools-style wrapper needs a "
        "failed put plus a GetItem and fails in-flight duplicates, the naive handler registers twice under a race "
        "(see `tests/lab/techniques/test_registration.py`).",
        "",
        "### Other TEMS paths",
        "",
        "| path | requests |",
        "| --- | --- |",
    ]
    lines += [f"| {label} | {cell(meter)} |" for label, meter in paths]
    lines += [
        "",
        "### Through HTTP: gunicorn + Django + DynamoDB Local",
        "",
        f"{CLIENT_THREADS} concurrent clients, {CLIENT_THREADS * REQUESTS_PER_THREAD} requests per row, each "
        f"logged in with its own session (CSRF enforced); gunicorn `{' '.join(GUNICORN_ARGS[:6])}`. The floor "
        "is `POST /bench/floor`: the same middleware and authentication, then one PutItem.",
        "",
        "| endpoint | requests/s | p50 ms | p99 ms | non-2xx |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, result in load["rows"]:
        errors = sum(n for status, n in result["statuses"].items() if status != 201)
        lines.append(f"| {label} | {result['rate']:.0f} | {result['p50']:.1f} | {result['p99']:.1f} | {errors} |")
    floor, registration = load["floor"], load["registration"]  # the uncontended registration row
    lines += [
        "",
        f"A registration (claim, two items, seat counter, completed idempotency record and outbox message in one "
        f"transaction of six items) costs **{floor['rate'] / registration['rate']:.2f}x** the floor's time per "
        f"request at throughput and **{registration['p50'] / floor['p50']:.2f}x** at the median "
        f"(p99 {registration['p99'] / floor['p99']:.2f}x), on events of their own. All clients on the same event "
        f"at once: {floor['rate'] / load['contended']['rate']:.2f}x. DynamoDB Local runs transactions one at a "
        "time, so it never reports TransactionConflict and the two registration rows differ by noise; on real "
        "DynamoDB the shared-event row would include conflict retries (jittered backoff, bounded, then 503).",
        "",
        f"_Section measured in {time.monotonic() - started:.0f} s._",
    ]
    return "\n".join(lines)


def _technique_counts() -> dict[str, tuple[DynamoMeter, DynamoMeter, DynamoMeter]]:
    counts = {}
    for name in TECHNIQUE_ROWS:
        technique = TECHNIQUES[name].run
        event_id, user_id, key = bench_event(100), f"{BENCH_USER_PREFIX}{name}", str(uuid.uuid4())

        def call(idempotency_key: str, technique=technique, event_id=event_id, user_id=user_id) -> Any:
            return technique(event_id=event_id, user_id=user_id, idempotency_key=idempotency_key)

        counts[name] = (measure(lambda key=key: call(key)), measure(lambda key=key: call(key)),
                        measure(lambda: call(str(uuid.uuid4()))))
    return counts


def _tems_path_counts() -> list[tuple[str, DynamoMeter]]:
    """The waitlist and cancellation paths, through the API's views (in process, with the test client)."""
    event_id = bench_event(1)
    users = [User.objects.create_user(f"{BENCH_USER_PREFIX}api-{n}-{uuid.uuid4().hex[:6]}") for n in range(3)]
    clients = []
    for user in users:
        client = Client()
        client.force_login(user)
        clients.append(client)

    def register(client: Client, key: str | None = None):
        response = client.post(f"/api/events/{event_id}/registrations",
                               HTTP_IDEMPOTENCY_KEY=key or str(uuid.uuid4()))
        if response.status_code not in (200, 201):
            raise RuntimeError(f"benchmark registration failed: {response.content!r}")
        return response.json()

    def cancel(client: Client, registration_id: str) -> None:
        response = client.delete(f"/api/registrations/{registration_id}", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
        if response.status_code != 200:
            raise RuntimeError(f"benchmark cancel failed: {response.content!r}")

    try:
        first: dict = {}
        rows = [("POST registration, seat free (API)", measure(lambda: first.update(register(clients[0]))))]
        second: dict = {}
        rows.append(("POST registration, event full: joins the waitlist", measure(
            lambda: second.update(register(clients[1])))))
        rows.append(("POST registration, already on the waitlist (new key; position counted on read)",
                     measure(lambda: register(clients[1]))))
        register(clients[2])
        rows.append(("DELETE registration, confirmed, head of waitlist promoted in the same transaction "
                     "(API, record in the cancel transaction)",
                     measure(lambda: cancel(clients[0], first["registration_id"]))))
        rows.append(("GET /api/me/registrations (one waitlisted)", measure(
            lambda: clients[2].get("/api/me/registrations"))))
    finally:
        User.objects.filter(pk__in=[user.pk for user in users]).delete()
    return rows


def _http_load(ctx: BenchContext) -> dict[str, Any]:
    suffix = uuid.uuid4().hex[:6]
    users = [User.objects.create_user(f"{BENCH_USER_PREFIX}http-{n}-{suffix}", password=BENCH_PASSWORD)
             for n in range(CLIENT_THREADS)]
    shared_events = [bench_event(CLIENT_THREADS * 2) for _ in range(REQUESTS_PER_THREAD)]
    own_events = [[bench_event(2) for _ in range(REQUESTS_PER_THREAD)] for _ in range(CLIENT_THREADS)]
    warmup_events = [bench_event(CLIENT_THREADS * 2) for _ in range(WARMUP_PER_THREAD)]

    def floor(index: int, n: int) -> tuple[str, bytes, dict[str, str]]:
        return "/bench/floor", b"", {}

    def warmup(index: int, n: int) -> tuple[str, bytes, dict[str, str]]:
        # Both workers warmed (imports, connections) and DynamoDB Local's JIT, on both paths.
        if n % 2:
            return "/bench/floor", b"", {}
        return f"/api/events/{warmup_events[n // 2]}/registrations", b"", {"Idempotency-Key": str(uuid.uuid4())}

    def registration_own_event(index: int, n: int) -> tuple[str, bytes, dict[str, str]]:
        # No two clients touch the same event: the cost of the transaction itself.
        return f"/api/events/{own_events[index][n]}/registrations", b"", {"Idempotency-Key": str(uuid.uuid4())}

    def registration_shared_event(index: int, n: int) -> tuple[str, bytes, dict[str, str]]:
        # All clients register their students for event n at once: they contend for its seat counter,
        # so some transactions are cancelled with TransactionConflict and retried after a jittered pause.
        return f"/api/events/{shared_events[n]}/registrations", b"", {"Idempotency-Key": str(uuid.uuid4())}

    try:
        with gunicorn_server(ctx) as port:
            clients = logged_in_clients(port, [user.get_username() for user in users])
            load_phase(clients, WARMUP_PER_THREAD * 2, warmup)
            floor_result = load_phase(clients, REQUESTS_PER_THREAD, floor)
            registration_result = load_phase(clients, REQUESTS_PER_THREAD, registration_own_event)
            contended_result = load_phase(clients, REQUESTS_PER_THREAD, registration_shared_event)
    finally:
        User.objects.filter(pk__in=[user.pk for user in users]).delete()
    return {
        "floor": floor_result,
        "registration": registration_result,
        "contended": contended_result,
        "rows": [("floor: `POST /bench/floor` (one PutItem)", floor_result),
                 ("registration, each client on its own events", registration_result),
                 (f"registration, all {CLIENT_THREADS} clients on the same event at once", contended_result)],
    }
