"""``make bench`` section of the registrations app (``run(ctx)`` is called by ``tems.bench``).

Two measurements, reported together in docs/PERFORMANCE.md:
1. DynamoDB requests of each registration path, per technique (exact: counted in botocore by ``metered()``).
2. Registrations per second and p50/p99 latency through the real HTTP stack (gunicorn + Django + DynamoDB
   Local), next to ``/bench/floor``, a view doing a single PutItem through the same stack: the floor.

The load is bounded (a few hundred requests per phase) so the whole section takes about a minute on 2 cores.
"""

from __future__ import annotations

import http.client
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from registrations import services
from registrations.techniques import TECHNIQUES
from tems.clock import utcnow
from tems.dynamo import DynamoMeter, metered
from tems.local_dynamodb import free_port

CLIENT_THREADS = 8  # concurrent clients; with 2 gunicorn workers x 4 threads the server is the bottleneck
REQUESTS_PER_THREAD = 40  # 320 requests per phase
WARMUP_PER_THREAD = 5
GUNICORN_ARGS = ("--workers", "2", "--worker-class", "gthread", "--threads", "4", "--log-level", "warning")
START_TIMEOUT_SECONDS = 60
BENCH_USER_PREFIX = "bench-"
BENCH_PASSWORD = secrets.token_urlsafe(16)

TECHNIQUE_ROWS = (
    ("tems", "**TEMS**: one transaction, record stored in it"),
    ("powertools_style", "claim + transaction + Powertools-style wrapper"),
    ("claim_transaction", "claim + transaction (no stored response)"),
    ("claim_only", "claim only (writes not atomic)"),
    ("naive", "naive read-then-write (**broken**)"),
)


def run(ctx) -> str:
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
    for name, label in TECHNIQUE_ROWS:
        first, replay, already = counts[name]
        lines.append(f"| {label} | {_cell(first)} | {_cell(replay)} | {_cell(already)} |")
    lines += [
        "",
        "Only TEMS answers a replay with the first response's bytes in one request and never runs the work "
        "twice: claim + transaction rebuilds an answer from the claim, the Powertools-style wrapper needs a "
        "failed put plus a GetItem and fails in-flight duplicates, the naive handler registers twice under a race "
        "(see `tests/registrations/test_techniques.py`).",
        "",
        "### Other TEMS paths",
        "",
        "| path | requests |",
        "| --- | --- |",
    ]
    lines += [f"| {label} | {_cell(meter)} |" for label, meter in paths]
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
        lines.append(f"| {label} | {result['rate']:.0f} | {result['p50']:.1f} | {result['p99']:.1f} | "
                     f"{result['errors']} |")
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


def _cell(meter: DynamoMeter) -> str:
    detail = ", ".join(f"{op} {n}" for op, n in sorted(meter.requests.items()))
    return f"{meter.total_requests} ({detail})"


def _event(capacity: int) -> str:
    return services.event_create(title="Bench night", starts_at=utcnow() + timedelta(days=30), capacity=capacity,
                                 created_by="bench").event_id


def _measure(call: Callable[[], Any]) -> DynamoMeter:
    with metered() as meter:
        call()
    return meter


def _technique_counts() -> dict[str, tuple[DynamoMeter, DynamoMeter, DynamoMeter]]:
    counts = {}
    for name, _ in TECHNIQUE_ROWS:
        technique = TECHNIQUES[name]
        event_id, user_id, key = _event(100), f"{BENCH_USER_PREFIX}{name}", str(uuid.uuid4())

        def call(idempotency_key: str, technique=technique, event_id=event_id, user_id=user_id) -> Any:
            return technique(event_id=event_id, user_id=user_id, idempotency_key=idempotency_key)

        counts[name] = (_measure(lambda: call(key)), _measure(lambda: call(key)),
                        _measure(lambda: call(str(uuid.uuid4()))))
    return counts


def _tems_path_counts() -> list[tuple[str, DynamoMeter]]:
    """The waitlist and cancellation paths, through the API's views (in process, with the test client)."""
    event_id = _event(1)
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
        rows = [("POST registration, seat free (API)", _measure(lambda: first.update(register(clients[0]))))]
        second: dict = {}
        rows.append(("POST registration, event full: joins the waitlist", _measure(
            lambda: second.update(register(clients[1])))))
        rows.append(("POST registration, already on the waitlist (new key; position counted on read)",
                     _measure(lambda: register(clients[1]))))
        register(clients[2])
        rows.append(("DELETE registration, confirmed, head of waitlist promoted in the same transaction "
                     "(API, record in the cancel transaction)",
                     _measure(lambda: cancel(clients[0], first["registration_id"]))))
        rows.append(("GET /api/me/registrations (one waitlisted)", _measure(
            lambda: clients[2].get("/api/me/registrations"))))
    finally:
        User.objects.filter(pk__in=[user.pk for user in users]).delete()
    return rows


# --- HTTP load ------------------------------------------------------------------------------------------------


class _HttpClient:
    """One keep-alive connection with its own cookie jar (a logged-in browser, minus the browser)."""

    def __init__(self, port: int):
        self.port = port
        self.cookies: dict[str, str] = {}
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def request(self, method: str, path: str, *, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        headers = {**(headers or {}), "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        for attempt in range(2):
            try:
                self.connection.request(method, path, body=body, headers=headers)
                response = self.connection.getresponse()
                data = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionError):
                # The server closed an idle keep-alive connection; every request here is safe to resend.
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt:
                    raise
        for header in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return response.status, data

    def log_in(self, username: str, password: str) -> None:
        self.request("GET", "/accounts/login/")
        form = urlencode({"username": username, "password": password,
                          "csrfmiddlewaretoken": self.cookies["csrftoken"]}).encode()
        status, _ = self.request("POST", "/accounts/login/", body=form,
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
        if status != 302 or "sessionid" not in self.cookies:
            raise RuntimeError(f"benchmark log-in failed with {status}")

    def post_api(self, path: str, **headers: str) -> tuple[int, bytes]:
        return self.request("POST", path, body=b"", headers={"X-CSRFToken": self.cookies["csrftoken"],
                                                             "Content-Type": "application/json", **headers})


def _start_gunicorn(ctx, port: int, log: Path, *, secret_key: str | None = None) -> subprocess.Popen:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "registrations.bench_settings",
        "DYNAMODB_ENDPOINT_URL": ctx.endpoint,
        "DYNAMODB_TABLE": ctx.table_name,
        "AWS_REGION": ctx.region,
        "DJANGO_DEBUG": "0",  # production settings: no query log, no debug pages
        "DJANGO_SECRET_KEY": secret_key or secrets.token_urlsafe(50),
        "DJANGO_HTTPS": "0",  # plain HTTP on one machine: no redirect to HTTPS, cookies sent without TLS
        "TEMS_LOG_LEVEL": "WARNING",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "tems.wsgi", "--bind", f"127.0.0.1:{port}", *GUNICORN_ARGS],
        cwd=settings.BASE_DIR, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/accounts/login/")
            if connection.getresponse().status == 200:
                return process
        except OSError:
            time.sleep(0.3)
    _stop(process)
    raise RuntimeError(f"gunicorn did not answer within {START_TIMEOUT_SECONDS} s")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _phase(clients: list[_HttpClient], request_for: Callable[[int, int], tuple[str, dict]],
           ok: set[int]) -> dict[str, float]:
    latencies: list[float] = []
    errors: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(clients))

    def work(index: int) -> None:
        client = clients[index]
        mine, failed = [], 0
        barrier.wait()
        for n in range(REQUESTS_PER_THREAD):
            path, headers = request_for(index, n)
            begin = time.perf_counter()
            status, _ = client.post_api(path, **headers)
            mine.append(time.perf_counter() - begin)
            failed += status not in ok
        with lock:
            latencies.extend(mine)
            errors.append(failed)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(clients))]
    begin = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - begin
    cuts = statistics.quantiles(latencies, n=100)
    return {"rate": len(latencies) / elapsed, "p50": cuts[49] * 1000, "p99": cuts[98] * 1000,
            "errors": sum(errors)}


def _http_load(ctx) -> dict[str, Any]:
    suffix = uuid.uuid4().hex[:6]
    users = [User.objects.create_user(f"{BENCH_USER_PREFIX}http-{n}-{suffix}", password=BENCH_PASSWORD)
             for n in range(CLIENT_THREADS)]
    shared_events = [_event(CLIENT_THREADS * 2) for _ in range(REQUESTS_PER_THREAD)]
    own_events = [[_event(2) for _ in range(REQUESTS_PER_THREAD)] for _ in range(CLIENT_THREADS)]
    port = free_port()
    with tempfile.TemporaryDirectory() as scratch:
        process = _start_gunicorn(ctx, port, Path(scratch) / "gunicorn.log")
        try:
            clients = [_HttpClient(port) for _ in users]
            for client, user in zip(clients, users):
                client.log_in(user.get_username(), BENCH_PASSWORD)
            warmup_events = [_event(CLIENT_THREADS * 2) for _ in range(WARMUP_PER_THREAD)]
            for client in clients:  # warm both workers (imports, connections) and DynamoDB Local's JIT
                for event_id in warmup_events:
                    client.post_api("/bench/floor")
                    client.post_api(f"/api/events/{event_id}/registrations", **{"Idempotency-Key": str(uuid.uuid4())})

            def floor(index: int, n: int) -> tuple[str, dict]:
                return "/bench/floor", {}

            def registration_own_event(index: int, n: int) -> tuple[str, dict]:
                # No two clients touch the same event: the cost of the transaction itself.
                return (f"/api/events/{own_events[index][n]}/registrations",
                        {"Idempotency-Key": str(uuid.uuid4())})

            def registration_shared_event(index: int, n: int) -> tuple[str, dict]:
                # All clients register their students for event n at once: they contend for its seat counter,
                # so some transactions are cancelled with TransactionConflict and retried after a jittered pause.
                return (f"/api/events/{shared_events[n]}/registrations",
                        {"Idempotency-Key": str(uuid.uuid4())})

            floor_result = _phase(clients, floor, {201})
            registration_result = _phase(clients, registration_own_event, {201})
            contended_result = _phase(clients, registration_shared_event, {201})
        finally:
            _stop(process)
            User.objects.filter(pk__in=[user.pk for user in users]).delete()
    return {
        "floor": floor_result,
        "registration": registration_result,
        "contended": contended_result,
        "rows": [("floor: `POST /bench/floor` (one PutItem)", floor_result),
                 ("registration, each client on its own events", registration_result),
                 (f"registration, all {CLIENT_THREADS} clients on the same event at once", contended_result)],
    }

