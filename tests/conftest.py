"""Shared fixtures: DynamoDB Local for anything concurrent or transactional, moto for fast unit tests."""

from __future__ import annotations

import contextlib
import functools
import os
import uuid
from pathlib import Path

import boto3
import botocore.session
import pytest
from botocore.client import BaseClient
from django.contrib.auth.models import User
from django.test import Client, override_settings

from tems.dynamo import LOCAL_CREDENTIALS, TableConfig, configure_models, ensure_table
from tems.local_dynamodb import DynamoDBLocal
from tems.metering import ready_clients
from tems.ratelimit import forget_refusals
from tests.helpers import CHROMIUM, REGION, TEST_JVM_OPTIONS


@pytest.fixture(scope="session")
def dynamodb_local_endpoint():
    """One in-memory DynamoDB Local for the whole run (or the one named by TEMS_TEST_DYNAMODB_ENDPOINT)."""
    external = os.environ.get("TEMS_TEST_DYNAMODB_ENDPOINT")
    if external:
        yield external
        return
    with DynamoDBLocal(jvm_options=TEST_JVM_OPTIONS) as server:
        yield server.endpoint


@pytest.fixture(scope="session", autouse=True)
def one_botocore_loader():
    """One botocore data loader for the whole run instead of one per client.

    Each endpoint the models meet (DynamoDB Local, moto, every capacity model a test starts) gets ~17 clients,
    each in a new botocore session that would parse the DynamoDB model and endpoint JSON again. The files are
    read-only data, so sharing them changes nothing a test can observe but the time.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.session, "create_loader", functools.cache(botocore.session.create_loader))
        yield


@pytest.fixture(scope="session")
def table_client(dynamodb_local_endpoint):
    """One boto3 client for making, emptying and dropping the test tables."""
    return boto3.client("dynamodb", region_name=REGION, endpoint_url=dynamodb_local_endpoint, **LOCAL_CREDENTIALS)


def _new_table(endpoint: str, client) -> TableConfig:
    config = TableConfig(f"tems_test_{uuid.uuid4().hex[:10]}", endpoint, REGION)
    ensure_table(client=client, table_name=config.table_name)
    return config


# Up to this many items a table is emptied key by key after a test (one scan, a few batch writes); past it,
# dropping the table and making the next one is cheaper.
EMPTY_AT_MOST = 100
BATCH_WRITE_LIMIT = 25


def _emptied(client, table_name: str) -> bool:
    """Delete every item of the table and say True, or say False and delete nothing if it holds too many."""
    page = client.scan(TableName=table_name, ProjectionExpression="PK, SK", ConsistentRead=True,
                       Limit=EMPTY_AT_MOST)
    if page.get("LastEvaluatedKey"):
        return False
    deletes = [{"DeleteRequest": {"Key": item}} for item in page["Items"]]
    for start in range(0, len(deletes), BATCH_WRITE_LIMIT):
        requests = deletes[start:start + BATCH_WRITE_LIMIT]
        while requests:
            answer = client.batch_write_item(RequestItems={table_name: requests})
            requests = answer.get("UnprocessedItems", {}).get(table_name, [])
    return True


@pytest.fixture(scope="module")
def module_table(dynamodb_local_endpoint, table_client):
    """The table a module's ``ddb`` tests take turns in (see ``ddb``); dropped when the module ends."""
    table: dict[str, TableConfig | None] = {"config": None}
    yield table
    if table["config"] is not None:
        table_client.delete_table(TableName=table["config"].table_name)


@pytest.fixture
def ddb(request, dynamodb_local_endpoint, table_client):
    """An empty table on DynamoDB Local for one test; every model points at it.

    The tests of a module take turns in one table, emptied after each, so each test starts from an empty table as
    if it were new, without paying for a new one. A test marked ``fresh_table`` gets a table of its own, dropped
    after it (tests on the live server are marked so: see ``pytest_collection_modifyitems``).
    """
    fresh = request.node.get_closest_marker("fresh_table") is not None
    table = None if fresh else request.getfixturevalue("module_table")
    config = (table and table["config"]) or _new_table(dynamodb_local_endpoint, table_client)
    if table is not None:
        table["config"] = config
    configure_models(config)
    # Warm clients, as on a server that has answered a request: a race must test the database, not client setup.
    ready_clients()
    yield config
    configure_models(TableConfig.from_settings())
    if table is None or not _emptied(table_client, config.table_name):
        table_client.delete_table(TableName=config.table_name)
        if table is not None:
            table["config"] = None


MOTO_ENVIRONMENT = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                    "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION}


@functools.cache
def _moto_client() -> BaseClient:
    """One client for making the moto tables. moto answers every client's requests while a mock is active, so a
    client need not be made inside the mock it is used in; a new one per test cost more than the test itself."""
    return boto3.client("dynamodb", region_name=REGION, aws_access_key_id="testing",
                        aws_secret_access_key="testing")


@contextlib.contextmanager
def _moto_table(patch: pytest.MonkeyPatch):
    from moto import mock_aws

    for name, value in MOTO_ENVIRONMENT.items():
        patch.setenv(name, value)
    with mock_aws():
        config = TableConfig("tems_moto", None, REGION)
        configure_models(config)
        ensure_table(client=_moto_client(), table_name=config.table_name)
        yield config
    configure_models(TableConfig.from_settings())


@pytest.fixture
def moto_ddb(monkeypatch):
    """moto's in-process DynamoDB: single-threaded unit tests only (it is not linearizable)."""
    with _moto_table(monkeypatch) as config:
        yield config


@pytest.fixture(scope="module")
def module_moto_ddb():
    """moto's DynamoDB for a whole module, for a world its tests only read (see ``moto_ddb``)."""
    with pytest.MonkeyPatch.context() as patch, _moto_table(patch) as config:
        yield config


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing():
    """Passwords hashed with a fast hasher, as Django's testing docs advise: the production hasher's iterations
    cost tenths of a second per user a fixture makes, and no test is about the hash's strength (the production
    settings are checked in tests/tems/test_settings.py)."""
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def no_write_limit(settings):
    """The suite writes far faster than a person: the per-user write limit is off unless a test turns it on
    (tests/tems/test_ratelimit.py). No refusal a test's server remembered outlives it."""
    settings.TEMS_WRITE_RATE = 0
    forget_refusals()


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "ddb" in fixtures:
            item.add_marker(pytest.mark.dynamodb_local)
        if "moto_ddb" in fixtures or "module_moto_ddb" in fixtures:
            item.add_marker(pytest.mark.moto)
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
        if "live_server" in fixtures:
            # A page may still have a request in flight when its test ends: its write must fail on a dropped
            # table, not land in the next test's.
            item.add_marker(pytest.mark.fresh_table)


@pytest.fixture
def student(db) -> User:
    return User.objects.create_user("student1", "student1@uni.test", "pw-student-1")


@pytest.fixture
def other_student(db) -> User:
    return User.objects.create_user("student2", "student2@uni.test", "pw-student-2")


@pytest.fixture
def staff_user(db) -> User:
    return User.objects.create_user("staffer", "staffer@uni.test", "pw-staff-1", is_staff=True)


@pytest.fixture
def student_client(student) -> Client:
    client = Client()
    client.force_login(student)
    return client


@pytest.fixture
def staff_client(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


@pytest.fixture
def csrf_staff_client(staff_user) -> Client:
    """A staff session whose unsafe requests must carry the CSRF token, as a browser's would."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    return client


# --- browser tests: Playwright drives Debian's Chromium against a live Django server on DynamoDB Local ---

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
# Playwright's sync API keeps an event loop on the test thread; the ORM calls our fixtures make are still
# synchronous and safe, so Django's async guard is lifted for the test run.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: `make test` installs it "
                    "(apt-get install chromium-headless-shell).")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"],
        )
        yield browser
        browser.close()


@pytest.fixture
def app_server(ddb, live_server, transactional_db):
    """The real app on a live server, its models pointed at this test's DynamoDB Local table."""
    return live_server.url


@pytest.fixture
def new_page(browser, request):
    """Make pages in fresh browser contexts; each is screenshotted into test-artifacts/ if the test fails."""
    contexts = []

    def make():
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        contexts.append(context)
        return context.new_page()

    yield make
    failed = getattr(request.node, "report_call", None) is not None and request.node.report_call.failed
    for n, context in enumerate(contexts):
        if failed:
            ARTIFACTS.mkdir(exist_ok=True)
            for m, page in enumerate(context.pages):
                page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-{n}-{m}.png"), full_page=True)
        context.close()



@pytest.fixture
def dynamodb_calls(monkeypatch) -> list[str]:
    """Every DynamoDB operation any client of this process sends (PynamoDB's, boto3's, from any thread)."""
    calls: list[str] = []
    original = BaseClient._make_api_call

    def recording(self, operation_name, api_params):
        if self.meta.service_model.service_name == "dynamodb":
            calls.append(operation_name)
        return original(self, operation_name, api_params)

    monkeypatch.setattr(BaseClient, "_make_api_call", recording)
    return calls
