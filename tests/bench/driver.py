"""The one HTTP driver of the benchmark sections: a gunicorn of TEMS, logged-in clients, and a load phase.

Every section that measures through the real stack (gunicorn + Django + DynamoDB Local) starts its server with
``gunicorn_server`` and fires its requests with ``load_phase``, so the numbers of different sections are taken
the same way. Also the small helpers the sections share (``measure``, ``cell``, ``bench_event``).
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
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from django.conf import settings

from registrations.events import services as event_services
from tems.clock import utcnow
from tems.local_dynamodb import free_port
from tems.metering import DynamoMeter, metered
from tests.bench.context import BenchContext

# As docs/DEPLOY.md runs it (gthread: threads with keep-alive), scaled to this machine's 2 cores.
GUNICORN_ARGS = ("--workers", "2", "--worker-class", "gthread", "--threads", "4", "--keep-alive", "75",
                 "--log-level", "warning")
# The server's settings: TEMS's own plus the floor view's URL (tests/bench/settings.py, tests/bench/site.py).
GUNICORN_SETTINGS = "tests.bench.settings"
START_TIMEOUT_SECONDS = 60
BENCH_USER_PREFIX = "bench-"
BENCH_PASSWORD = secrets.token_urlsafe(16)

# (path, body, extra headers) of the n-th request of client ``index`` in a phase.
RequestFor = Callable[[int, int], tuple[str, bytes, dict[str, str]]]


def measure(call: Callable[[], Any]) -> DynamoMeter:
    with metered() as meter:
        call()
    return meter


def cell(meter: DynamoMeter) -> str:
    detail = ", ".join(f"{op} {n}" for op, n in sorted(meter.requests.items()))
    return f"{meter.total_requests} ({detail})"


def bench_event(capacity: int) -> str:
    return event_services.event_create(title="Bench night", starts_at=utcnow() + timedelta(days=30), capacity=capacity,
                                 created_by="bench").event_id


class HttpClient:
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

    def post_api(self, path: str, body: bytes = b"", **headers: str) -> tuple[int, bytes]:
        return self.request("POST", path, body=body, headers={"X-CSRFToken": self.cookies["csrftoken"],
                                                              "Content-Type": "application/json", **headers})


def _start(ctx: BenchContext, port: int, log: Path, secret_key: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": GUNICORN_SETTINGS,
        "DYNAMODB_ENDPOINT_URL": ctx.endpoint,
        "DYNAMODB_TABLE": ctx.table_name,
        "AWS_REGION": ctx.region,
        "DJANGO_DEBUG": "0",  # production settings: no query log, no debug pages
        "DJANGO_SECRET_KEY": secret_key,
        "DJANGO_HTTPS": "0",  # plain HTTP on one machine: no redirect to HTTPS, cookies sent without TLS
        "TEMS_LOG_LEVEL": "WARNING",
    }
    # cwd is the repository root, so ``tests.bench.settings`` imports in the server as it does here.
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


@contextmanager
def gunicorn_server(ctx: BenchContext, *, secret_key: str | None = None) -> Iterator[int]:
    """A gunicorn of TEMS with production settings on a free port, for the ``with`` block; yields the port.

    ``secret_key`` when the section signs something the server must verify (tickets).
    """
    port = free_port()
    with tempfile.TemporaryDirectory() as scratch:
        process = _start(ctx, port, Path(scratch) / "gunicorn.log", secret_key or secrets.token_urlsafe(50))
        try:
            yield port
        finally:
            _stop(process)


def logged_in_clients(port: int, usernames: list[str]) -> list[HttpClient]:
    clients = [HttpClient(port) for _ in usernames]
    for client, username in zip(clients, usernames, strict=True):
        client.log_in(username, BENCH_PASSWORD)
    return clients


def load_phase(clients: list[HttpClient], requests: int, request_for: RequestFor) -> dict[str, Any]:
    """Every client sends ``requests`` POSTs, all clients started together; rate, p50/p99 ms and the statuses."""
    latencies: list[float] = []
    statuses: Counter = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(len(clients))

    def work(index: int) -> None:
        client = clients[index]
        mine, seen = [], Counter()
        barrier.wait()
        for n in range(requests):
            path, body, headers = request_for(index, n)
            begin = time.perf_counter()
            status, _ = client.post_api(path, body, **headers)
            mine.append(time.perf_counter() - begin)
            seen[status] += 1
        with lock:
            latencies.extend(mine)
            statuses.update(seen)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(clients))]
    begin = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - begin
    cuts = statistics.quantiles(latencies, n=100)
    return {"rate": len(latencies) / elapsed, "p50": cuts[49] * 1000, "p99": cuts[98] * 1000, "statuses": statuses}
