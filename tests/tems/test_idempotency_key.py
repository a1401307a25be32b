"""The Idempotency-Key header as the draft writes it (a Structured Field string) and as TEMS's clients send it
(bare): one key either way, anything else 400 naming the rule, every key error linked to the published policy."""

import uuid

import pytest
from django.urls import reverse

from registrations.write_rules import CONFLICT_MAX_DELAY, MAX_CONFLICTS
from tems.errors import DomainError
from tems.idempotency import MAX_KEY_CHARS, POLICY_PATH, RECORD_TTL, parse_key, policy_url
from tests.helpers import assert_problem
from tests.registrations.helpers import make_event

DRAFT_EXAMPLE = "8e03978e-40d5-43e8-bc93-6894a57f9324"


@pytest.mark.parametrize("header, key", [
    (f'"{DRAFT_EXAMPLE}"', DRAFT_EXAMPLE),  # the draft's own example
    (DRAFT_EXAMPLE, DRAFT_EXAMPLE),  # the bare form TEMS's pages send
    (f'  "{DRAFT_EXAMPLE.upper()}"\t', DRAFT_EXAMPLE),  # OWS around it; a UUID is one key in either case
    (DRAFT_EXAMPLE.replace("-", ""), DRAFT_EXAMPLE),
    (f'"{{{DRAFT_EXAMPLE}}}"', DRAFT_EXAMPLE),  # braces are no token, but fine inside the string
    (f'"{DRAFT_EXAMPLE}";client=7', DRAFT_EXAMPLE),  # parameters are ignored
    ("tap-42", "tap-42"),
    ('"tap-42"', "tap-42"),
    ('"a \\"quoted\\" key \\\\ here"', 'a "quoted" key \\ here'),  # sf-string escapes are undone
    ("1234", "1234"),  # a bare key may start with a digit (it is a token, not an sf-token)
    ("k" * MAX_KEY_CHARS, "k" * MAX_KEY_CHARS),
    (f'"{"k" * MAX_KEY_CHARS}"', "k" * MAX_KEY_CHARS),
])
def test_quoted_and_bare_forms_name_one_key(header, key):
    assert parse_key(header) == key


@pytest.mark.parametrize("header", [
    '""',  # empty
    f'"{DRAFT_EXAMPLE}',  # unterminated
    f'"{DRAFT_EXAMPLE}"x',  # trailing characters
    '"a\\x"',  # an escape sf-string does not have
    '"caf\u00e9"',  # not ASCII: an sf-string cannot hold it
    '"tab\there"',
    "two words",  # bare, only token characters
    "{" + DRAFT_EXAMPLE + "}",
    ':YWJj:',  # a byte sequence, not a string
    '?1',
    "k" * (MAX_KEY_CHARS + 1),
    f'"{"k" * (MAX_KEY_CHARS + 1)}"',
    "k" * 5000,
])
def test_anything_else_is_400_naming_the_rule(header):
    with pytest.raises(DomainError) as caught:
        parse_key(header)
    error = caught.value
    assert error.status == 400
    assert "Structured Field string (RFC 9651)" in error.detail and f"1 to {MAX_KEY_CHARS} characters" in error.detail
    assert error.extra["type"] == policy_url()


@pytest.mark.parametrize("header", [None, ""])
def test_a_missing_key_is_400_linked_to_the_policy(header):
    with pytest.raises(DomainError) as caught:
        parse_key(header)
    assert caught.value.status == 400 and caught.value.extra["type"] == policy_url()


def register(client, event_id: str, key: str):
    return client.post(f"/api/events/{event_id}/registrations", HTTP_IDEMPOTENCY_KEY=key)


def test_a_quoted_key_and_its_bare_form_dedupe_to_one_registration(ddb, student_client):
    event = make_event(capacity=5)
    key = str(uuid.uuid4())
    first = register(student_client, event.event_id, f'"{key}"')
    again = register(student_client, event.event_id, key)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    assert not first.has_header("Idempotent-Replayed")
    listed = student_client.get("/api/me/registrations").json()["registrations"]
    assert [r["registration_id"] for r in listed] == [first.json()["registration_id"]]


def test_a_malformed_key_is_problem_json_typed_and_linked_to_the_policy(ddb, student_client):
    event = make_event(capacity=5)
    response = register(student_client, event.event_id, "not a key")
    body = assert_problem(response, 400)
    assert body["type"] == policy_url() and body["title"] == "Idempotency-Key problem"
    assert response["Link"] == f'<{policy_url()}>; rel="describedby"'
    assert "Structured Field string" in body["detail"]
    assert student_client.get("/api/me/registrations").json()["registrations"] == []


def test_a_key_reused_for_another_request_links_the_policy(ddb, student_client):
    one, two = make_event(capacity=5), make_event(capacity=5)
    key = str(uuid.uuid4())
    assert register(student_client, one.event_id, key).status_code == 201
    response = register(student_client, two.event_id, f'"{key}"')  # the same key, quoted this time
    body = assert_problem(response, 422)
    assert body["type"] == policy_url() and response["Link"] == f'<{policy_url()}>; rel="describedby"'


def test_other_problems_keep_about_blank_and_no_link(ddb, student_client):
    response = register(student_client, "no-such-event", str(uuid.uuid4()))
    body = assert_problem(response, 404)
    assert body["type"] == "about:blank" and not response.has_header("Link")


@pytest.mark.django_db
def test_the_policy_is_published_at_its_stable_address_with_the_codes_numbers(client):
    assert reverse("idempotency_policy") == POLICY_PATH == "/idempotency-key/"
    assert policy_url().endswith(POLICY_PATH)
    response = client.get(POLICY_PATH)
    page = " ".join(response.content.decode().split())
    assert response.status_code == 200
    assert f"{int(RECORD_TTL.total_seconds() // 3600)} hours" in page and f"1 to {MAX_KEY_CHARS} characters" in page
    for fact in ("Per user", "422", "409", "Retry-After: 15", "waits up to 3 seconds",
                 f'Idempotency-Key: "{DRAFT_EXAMPLE}"'):
        assert fact in page, fact


def test_the_page_states_no_shorter_contention_wait_than_registrations_take():
    from tems.views import CONTENTION_SECONDS

    assert CONTENTION_SECONDS >= MAX_CONFLICTS * CONFLICT_MAX_DELAY
