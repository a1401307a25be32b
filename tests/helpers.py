"""Helpers shared by the tests of every app (fixtures live in conftest.py, helpers here)."""

import os
from pathlib import Path

from tems.invariants import check_all

# The region every test table lives in, on DynamoDB Local and moto alike.
REGION = "eu-west-1"
# A test's DynamoDB Local answers for minutes, not days: the JVM's optimising compiler (C2) spends much of its CPU
# compiling code that the run ends before it pays off, on the same two cores the tests need. The quick compiler
# alone, and one garbage collector thread for a small heap (docs/journal/2026-12-06-suite-minutes.md).
TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
# The browser tests' Chromium: Debian's headless shell where it is installed, else its full browser (README "Tests"
# says why); TEMS_CHROMIUM names another.
CHROMIUM = os.environ.get("TEMS_CHROMIUM") or next(
    (path for path in ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium") if Path(path).exists()),
    "/usr/bin/chromium")


def assert_problem(response, status: int) -> dict:
    """The response is an RFC 9457 problem with this status and a detail a person can read."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["detail"]
    return body


def broken_invariants(**check_args) -> dict[str, list[str]]:
    """The invariants (tems.invariants, every app's) that fail on the table as it is now, with what each found."""
    return {name: found for name, found in check_all(**check_args).items() if found}


def assert_invariants_clean(**check_args) -> None:
    """Every invariant of every app holds on the table as it is now."""
    broken = broken_invariants(**check_args)
    assert broken == {}, broken
