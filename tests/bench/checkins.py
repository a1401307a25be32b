"""``make bench`` section of the door (``run(ctx)`` is called by ``python -m tests.bench``).

1. DynamoDB requests of each scan path (exact: counted in botocore by ``metered()``), through the API's view.
2. Door answer latency through the real HTTP stack (gunicorn + Django + DynamoDB Local) with 4 doors scanning
   at once: each door its own tickets, then every door the same tickets (one admits, three are told).
"""

from __future__ import annotations

import json
import secrets
import time
import uuid

from django.contrib.auth.models import User
from django.test import Client, override_settings

from registrations import services as registration_services
from tests.bench.context import BenchContext
from tests.bench.driver import (
    BENCH_PASSWORD,
    BENCH_USER_PREFIX,
    bench_event,
    cell,
    gunicorn_server,
    load_phase,
    logged_in_clients,
    measure,
)

DOORS = 4
SCANS_PER_DOOR = 40
WARMUP_SCANS = 5


def run(ctx: BenchContext) -> str:
    started = time.monotonic()
    counts = _request_counts()
    load = _http_load(ctx)
    lines = [
        "## Door (check-in)",
        "",
        "### DynamoDB requests per scan (through `POST /api/events/<id>/checkins`)",
        "",
        "| path | requests |",
        "| --- | --- |",
        *[f"| {label} | {cell(meter)} |" for label, meter in counts],
        "",
        "### Door answers through HTTP: gunicorn + Django + DynamoDB Local",
        "",
        f"{DOORS} doors (staff sessions, CSRF enforced) scanning at once, {SCANS_PER_DOOR} scans each per row, "
        "all on one event. Latency is the door's wait for its answer.",
        "",
        "| scans | scans/s | p50 ms | p99 ms | answers |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, result in load:
        answers = ", ".join(f"{status}: {n}" for status, n in sorted(result["statuses"].items()))
        lines.append(f"| {label} | {result['rate']:.0f} | {result['p50']:.1f} | {result['p99']:.1f} | {answers} |")
    lines += [
        "",
        "A first check-in is one TransactWriteItems of six items (check-in under `attribute_not_exists`, "
        "ConditionCheck that the registration is confirmed, counter, COMPLETED idempotency record, outbox message, "
        "history entry); a replay is the same request failing on the idempotency record and answering from its "
        "ALL_OLD image; \"already checked in\" adds one small transaction to store that answer under the scan's key.",
        "",
        f"_Section measured in {time.monotonic() - started:.0f} s._",
    ]
    return "\n".join(lines)


def _tickets(event_id: str, count: int) -> list[str]:
    return [registration_services.registration_create(
        event_id=event_id, user_id=f"{BENCH_USER_PREFIX}ticket-{uuid.uuid4().hex[:10]}",
        idempotency_key=str(uuid.uuid4()), fingerprint="bench",
    ).data["ticket_url"] for _ in range(count)]


def _request_counts() -> list[tuple[str, object]]:
    event_id = bench_event(10)
    ticket, other = _tickets(event_id, 2)
    staff = User.objects.create_user(f"{BENCH_USER_PREFIX}door-{uuid.uuid4().hex[:6]}", is_staff=True)
    client = Client()
    client.force_login(staff)
    url = f"/api/events/{event_id}/checkins"

    def scan(text: str, key: str, expected: int) -> None:
        response = client.post(url, data=json.dumps({"ticket": text, "door": "A"}), content_type="application/json",
                               HTTP_IDEMPOTENCY_KEY=key)
        if response.status_code != expected:
            raise RuntimeError(f"benchmark scan answered {response.status_code}: {response.content!r}")

    key = str(uuid.uuid4())
    try:
        rows = [
            ("first check-in (201)", measure(lambda: scan(ticket, key, 201))),
            ("replay: the same scan's key again (201, `Idempotent-Replayed`)",
             measure(lambda: scan(ticket, key, 201))),
            ("already checked in: another scan, new key (200)",
             measure(lambda: scan(ticket, str(uuid.uuid4()), 200))),
            ("GET `/checkins/stats`", measure(lambda: client.get(f"/api/events/{event_id}/checkins/stats"))),
        ]
        scan(other, str(uuid.uuid4()), 201)
    finally:
        staff.delete()
    return rows


def _http_load(ctx: BenchContext) -> list[tuple[str, dict]]:
    suffix = uuid.uuid4().hex[:6]
    staff = [User.objects.create_user(f"{BENCH_USER_PREFIX}door-{n}-{suffix}", password=BENCH_PASSWORD,
                                      is_staff=True) for n in range(DOORS)]
    event_id = bench_event(DOORS * SCANS_PER_DOOR * 2 + WARMUP_SCANS * DOORS)
    # Tickets are signed with the server's secret key: the server this section starts shares one with us.
    secret_key = secrets.token_urlsafe(50)
    with override_settings(SECRET_KEY=secret_key):
        own = [_tickets(event_id, SCANS_PER_DOOR) for _ in range(DOORS)]
        shared = _tickets(event_id, SCANS_PER_DOOR)
        warmup = [_tickets(event_id, WARMUP_SCANS) for _ in range(DOORS)]

    def scans(tickets_for: list[list[str]]):
        def request_for(index: int, n: int) -> tuple[str, bytes, dict[str, str]]:
            body = json.dumps({"ticket": tickets_for[index][n], "door": f"door-{index}"}).encode()
            return f"/api/events/{event_id}/checkins", body, {"Idempotency-Key": str(uuid.uuid4())}
        return request_for

    try:
        with gunicorn_server(ctx, secret_key=secret_key) as port:
            doors = logged_in_clients(port, [user.get_username() for user in staff])
            load_phase(doors, WARMUP_SCANS, scans(warmup))  # imports, connections, DynamoDB Local's JIT
            own_result = load_phase(doors, SCANS_PER_DOOR, scans(own))
            shared_result = load_phase(doors, SCANS_PER_DOOR, scans([shared] * DOORS))
    finally:
        User.objects.filter(pk__in=[user.pk for user in staff]).delete()
    return [(f"{DOORS} doors, each its own tickets", own_result),
            (f"{DOORS} doors, the same tickets at once (each ticket scanned by every door)", shared_result)]
