"""Health probes for load balancers and orchestrators, answered before host validation and the HTTPS redirect.

A balancer probes each instance by its private address over plain HTTP, so a probe would fail ALLOWED_HOSTS and
be redirected to HTTPS; neither says anything about whether the process can serve. Hence this middleware is the
first one, and answers GET and HEAD of its paths itself:

- ``/livez``: the process answers. No I/O, so a DynamoDB or database hiccup never gets every instance restarted
  at once (a container runtime's ``HEALTHCHECK`` and a liveness probe use it).
- ``/readyz``: the process can serve now: one cheap DynamoDB request (a GetItem of a key that never exists) and
  one ``SELECT 1`` on Django's database. 503 naming what is down; a balancer stops sending traffic meanwhile.
- ``/healthz``: the older name of ``/livez``, kept for the balancers and the benchmark that use it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.db import DatabaseError, connections
from django.http import HttpRequest, HttpResponse

from tems import telemetry
from tems.dynamo import TableConfig, current_config

LIVE_PATH = "/livez"
READY_PATH = "/readyz"
HEALTH_PATH = "/healthz"

# A key no item ever has (nothing writes a HEALTH# partition): the GetItem finds nothing and costs half a read
# unit, and it needs only the GetItem the app's policy already allows.
PROBE_KEY = {"PK": {"S": "HEALTH#readyz"}, "SK": {"S": "PROBE"}}
# Well under a balancer's probe timeout (5 s by default on an ALB), and one attempt: a probe that has to retry to
# succeed is the answer "not ready now", and the balancer asks again anyway. ``total_max_attempts`` counts the
# first request; botocore's ``max_attempts`` counts retries only, so ``max_attempts: 1`` would send two.
PROBE_CONFIG = Config(connect_timeout=1, read_timeout=2, retries={"total_max_attempts": 1, "mode": "standard"})


@functools.lru_cache(maxsize=4)
def _probe_client(config: TableConfig):
    # One client per table configuration and process: building one parses botocore's model, too slow per probe.
    return boto3.client("dynamodb", region_name=config.region, endpoint_url=config.host, config=PROBE_CONFIG,
                        **config.credentials)


def _reason(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def dynamodb_problem() -> str | None:
    """None when the table answers a GetItem; otherwise why not."""
    config = current_config()
    try:
        _probe_client(config).get_item(TableName=config.table_name, Key=PROBE_KEY, ProjectionExpression="PK")
    except (BotoCoreError, ClientError) as error:
        return _reason(error)
    return None


def database_problem() -> str | None:
    """None when Django's default database answers ``SELECT 1``; otherwise why not."""
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as error:
        return _reason(error)
    return None


def readiness() -> tuple[bool, dict[str, str]]:
    """Whether this instance can serve, and each dependency's state ("ok" or the reason it is down)."""
    checks = {"dynamodb": dynamodb_problem(), "database": database_problem()}
    return all(problem is None for problem in checks.values()), {
        name: problem or "ok" for name, problem in checks.items()}


def _ready_response() -> HttpResponse:
    ready, checks = readiness()
    body = {"status": "ready" if ready else "unavailable", "checks": checks}
    response = HttpResponse(json.dumps(body), status=200 if ready else 503, content_type="application/json")
    response["Cache-Control"] = "no-store"
    return response


def _live_response() -> HttpResponse:
    response = HttpResponse("ok", content_type="text/plain")
    response["Cache-Control"] = "no-store"
    return response


PROBES: dict[str, Callable[[], HttpResponse]] = {
    LIVE_PATH: _live_response, HEALTH_PATH: _live_response, READY_PATH: _ready_response}


class HealthCheckMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is not None and request.method in {"GET", "HEAD"}:
            response = probe()
            # Every answer carries a request id, a probe's too, though a probe writes no log line (balancers
            # ask every few seconds): a client or proxy that sends one gets it back from any path.
            request_id = telemetry.request_id_from(request.META.get(telemetry.REQUEST_ID_META))
            response[telemetry.REQUEST_ID_HEADER] = request_id
            return response
        return self.get_response(request)
