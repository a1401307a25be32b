"""Shared fixtures: DynamoDB Local for anything concurrent or transactional, moto for fast unit tests."""

from __future__ import annotations

import os
import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tems.dynamo import TableConfig, boto3_client, configure_models, ensure_table
from tems.local_dynamodb import DynamoDBLocal

REGION = "eu-west-1"


@pytest.fixture(scope="session")
def dynamodb_local_endpoint():
    """One in-memory DynamoDB Local for the whole run (or the one named by TEMS_TEST_DYNAMODB_ENDPOINT)."""
    external = os.environ.get("TEMS_TEST_DYNAMODB_ENDPOINT")
    if external:
        yield external
        return
    with DynamoDBLocal() as server:
        yield server.endpoint


@pytest.fixture
def ddb(dynamodb_local_endpoint):
    """A fresh table on DynamoDB Local for one test; every model points at it."""
    config = TableConfig(f"tems_test_{uuid.uuid4().hex[:10]}", dynamodb_local_endpoint, REGION)
    configure_models(config)
    ensure_table()
    yield config
    boto3_client().delete_table(TableName=config.table_name)
    configure_models(TableConfig.from_settings())


@pytest.fixture
def moto_ddb(monkeypatch):
    """moto's in-process DynamoDB: single-threaded unit tests only (it is not linearizable)."""
    from moto import mock_aws

    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        config = TableConfig("tems_moto", None, REGION)
        configure_models(config)
        ensure_table()
        yield config
    configure_models(TableConfig.from_settings())


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "ddb" in fixtures:
            item.add_marker(pytest.mark.dynamodb_local)
        if "moto_ddb" in fixtures:
            item.add_marker(pytest.mark.moto)


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
