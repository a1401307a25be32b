"""The per-user write limit (issue 14, finding 9): counted in DynamoDB, per user, unsafe requests only."""

import uuid
from datetime import UTC, datetime

from django.test import Client

from tems.identity import user_key
from tems.ratelimit import WriteRateCounter, write_rate_take
from tests.helpers import assert_problem
from tests.race import race

T0 = datetime(2026, 11, 30, 12, 0, 10, tzinfo=UTC)


def unsafe(client: Client, n: int = 1, **headers):
    # An unknown registration: cheap, unsafe, and answered 404 when it gets past the limit.
    return [client.delete(f"/api/registrations/none-{uuid.uuid4().hex[:8]}", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
                          **headers) for _ in range(n)]


def test_the_fourth_unsafe_request_in_the_minute_is_429_with_retry_after(moto_ddb, settings, student_client):
    settings.TEMS_WRITE_RATE = 3
    assert [r.status_code for r in unsafe(student_client, 3)] == [404, 404, 404]
    refused = unsafe(student_client)[0]
    body = assert_problem(refused, 429)
    assert 1 <= int(refused["Retry-After"]) <= 60 and body["retry_after"] == int(refused["Retry-After"])
    assert "3 a minute" in body["detail"]


def test_reads_are_not_counted(moto_ddb, settings, student_client):
    settings.TEMS_WRITE_RATE = 1
    for _ in range(5):
        assert student_client.get("/api/me/registrations").status_code == 200
    assert unsafe(student_client)[0].status_code == 404
    assert unsafe(student_client)[0].status_code == 429


def test_the_limit_is_per_user_not_global(moto_ddb, settings, student_client, other_student):
    settings.TEMS_WRITE_RATE = 2
    unsafe(student_client, 2)
    assert unsafe(student_client)[0].status_code == 429
    other = Client()
    other.force_login(other_student)
    assert [r.status_code for r in unsafe(other, 2)] == [404, 404]


def test_zero_turns_the_limit_off_and_writes_nothing(moto_ddb, settings, student, student_client):
    settings.TEMS_WRITE_RATE = 0
    assert {r.status_code for r in unsafe(student_client, 70)} == {404}
    pk, _ = WriteRateCounter.key_for(user_key(student), 0)
    assert WriteRateCounter.count(pk) == 0


def test_a_page_gets_a_readable_page_and_htmx_a_fragment(moto_ddb, settings, student_client):
    settings.TEMS_WRITE_RATE = 1
    # A page the middleware counts (a registration counts itself, and only when it writes: test_ratelimit_transaction).
    student_client.post("/registrations/nope/cancel/", {"idempotency_key": str(uuid.uuid4())})
    page = student_client.post("/registrations/nope/cancel/", {"idempotency_key": str(uuid.uuid4())})
    assert page.status_code == 429 and page["Retry-After"] and page["Content-Type"].startswith("text/html")
    assert "Too many changes: at most 1 a minute" in page.content.decode() and "<html" in page.content.decode()
    fragment = student_client.post("/registrations/nope/cancel/", {}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 429 and "<html" not in fragment.content.decode()
    assert 'role="alert"' in fragment.content.decode() and fragment["HX-Retarget"] == "#main"


def test_logging_out_is_never_refused(moto_ddb, settings, student_client):
    settings.TEMS_WRITE_RATE = 1
    unsafe(student_client, 2)
    assert student_client.post("/accounts/logout/").status_code == 302


def test_the_window_item_is_keyed_by_the_immutable_key_and_expires(moto_ddb, student):
    assert write_rate_take(user_id=user_key(student), limit=2, now=T0) is None
    counter = WriteRateCounter.get(*WriteRateCounter.key_for(user_key(student), int(T0.timestamp()) // 60))
    assert int(counter.n) == 1 and counter.expires_at > T0
    assert write_rate_take(user_id=user_key(student), limit=2, now=T0) is None
    assert write_rate_take(user_id=user_key(student), limit=2, now=T0).retry_after == 50
    # The next minute is a new window.
    assert write_rate_take(user_id=user_key(student), limit=2, now=T0.replace(minute=1)) is None


def test_concurrent_requests_of_one_user_never_pass_the_limit(ddb):
    """Twenty requests at once against a limit of 5: the database decides, so exactly 5 pass."""
    passed = race([lambda: write_rate_take(user_id="racer", limit=5, now=T0) is None] * 20)
    assert passed.count(True) == 5
