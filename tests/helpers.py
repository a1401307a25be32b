"""Helpers shared by the tests of every app (fixtures live in conftest.py, helpers here)."""

# The region every test table lives in, on DynamoDB Local and moto alike.
REGION = "eu-west-1"


def assert_problem(response, status: int) -> dict:
    """The response is an RFC 9457 problem with this status and a detail a person can read."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["detail"]
    return body
