"""/livez, /readyz and /healthz: answered before host checks and redirects; /readyz reads DynamoDB and the DB."""

import socket
import threading
import time
import uuid

import pytest
from django.db import OperationalError

from tems import health
from tems.dynamo import TableConfig, configure_models, ensure_table
from tems.local_dynamodb import DynamoDBLocal
from tests.helpers import REGION, TEST_JVM_OPTIONS

BALANCER = {"HTTP_HOST": "10.0.3.17"}  # a private address, as a load balancer probes by: not in ALLOWED_HOSTS


@pytest.fixture
def https_only(settings):
    settings.SECURE_SSL_REDIRECT = True


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/livez", "/healthz"])
def test_liveness_answers_any_host_without_redirect_or_io(client, https_only, path, dynamodb_calls,
                                                         django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get(path, **BALANCER)
    assert (response.status_code, response.content, response["Cache-Control"]) == (200, b"ok", "no-store")
    assert dynamodb_calls == []
    assert client.head(path, **BALANCER).status_code == 200
    # The same host on any other path is refused: only the probes skip host validation.
    assert client.get("/accounts/login/", **BALANCER).status_code == 400


@pytest.mark.django_db
def test_readiness_reads_the_table_and_the_database_once(client, https_only, ddb, dynamodb_calls,
                                                       django_assert_num_queries):
    with django_assert_num_queries(1):
        response = client.get("/readyz", **BALANCER)
    assert response.status_code == 200, response.content
    assert response.json() == {"status": "ready", "checks": {"dynamodb": "ok", "database": "ok"}}
    assert response["Cache-Control"] == "no-store"
    assert dynamodb_calls == ["GetItem"]


@pytest.mark.django_db
def test_readiness_is_503_naming_a_missing_table(client, ddb):
    configure_models(TableConfig(f"tems_missing_{uuid.uuid4().hex[:8]}", ddb.host, ddb.region))
    response = client.get("/readyz", **BALANCER)
    body = response.json()
    assert response.status_code == 503 and body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["dynamodb"].startswith("ResourceNotFoundException"), body


@pytest.mark.django_db
def test_readiness_is_503_with_the_database_down(client, ddb, monkeypatch):
    def refuse(*args, **kwargs):
        raise OperationalError("could not connect to server: Connection refused")

    monkeypatch.setattr("django.db.backends.base.base.BaseDatabaseWrapper.ensure_connection", refuse)
    response = client.get("/readyz", **BALANCER)
    assert response.status_code == 503
    assert response.json()["checks"] == {
        "dynamodb": "ok", "database": "OperationalError: could not connect to server: Connection refused"}


@pytest.mark.django_db
def test_with_dynamodb_stopped_readiness_is_503_and_liveness_200(client):
    """A DynamoDB Local of its own, stopped under the running app: the balancer takes the instance out of
    rotation (/readyz 503 naming DynamoDB), and the runtime does not restart it (/livez 200)."""
    server = DynamoDBLocal(jvm_options=TEST_JVM_OPTIONS).start()
    try:
        configure_models(TableConfig("tems_readyz", server.endpoint, REGION))
        ensure_table()
        assert client.get("/readyz", **BALANCER).status_code == 200
        server.stop()
        response = client.get("/readyz", **BALANCER)
        assert response.status_code == 503, response.content
        assert response.json()["checks"]["database"] == "ok"
        assert "EndpointConnectionError" in response.json()["checks"]["dynamodb"], response.content
        assert client.get("/livez", **BALANCER).status_code == 200
    finally:
        server.stop()
        configure_models(TableConfig.from_settings())


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/livez", "/healthz", "/readyz"])
def test_probes_carry_a_request_id_like_every_answer(client, ddb, path):
    assert client.get(path, **BALANCER, HTTP_X_REQUEST_ID="probe-7:lb").headers["X-Request-ID"] == "probe-7:lb"
    first, second = (client.head(path, **BALANCER, HTTP_X_REQUEST_ID="not well formed!").headers["X-Request-ID"]
                     for _ in range(2))
    assert len(first) == len(second) == 32 and first != second


@pytest.mark.django_db
def test_probes_answer_only_reads(client):
    # A POST to a probe path is not a probe: it goes through the app like any request (and finds no route).
    assert client.post("/readyz").status_code == 404



class HungDynamoDB:
    """A server on 127.0.0.1 that accepts connections and reads requests, and never answers one."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.requests = 0
        self.held: list[socket.socket] = []
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(connection)
            threading.Thread(target=self._read, args=(connection,), daemon=True).start()

    def _read(self, connection: socket.socket) -> None:
        received = b""
        while True:
            try:
                chunk = connection.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            received += chunk
            # One request per header block; the body (a small JSON) follows and is not parsed.
            while b"\r\n\r\n" in received:
                head, _, received = received.partition(b"\r\n\r\n")
                if head.split(b" ", 1)[0] == b"POST":
                    self.requests += 1

    def close(self) -> None:
        self.closed.set()
        self.listener.close()
        for connection in self.held:
            connection.close()


@pytest.mark.django_db
def test_a_hung_dynamodb_gets_one_request_and_readiness_answers_within_its_timeout(client):
    hung = HungDynamoDB()
    config = TableConfig("tems_hung", hung.endpoint, REGION)
    try:
        configure_models(config)
        health._probe_client(config)  # built once per process, as on a server that has answered a probe before
        started = time.monotonic()
        response = client.get("/readyz", **BALANCER)
        elapsed = time.monotonic() - started
        time.sleep(0.2)  # a retry would have been sent by now
        assert response.status_code == 503
        assert "ReadTimeout" in response.json()["checks"]["dynamodb"], response.content
        assert hung.requests == 1
        assert elapsed < 2.5, elapsed
    finally:
        hung.close()
        configure_models(TableConfig.from_settings())
