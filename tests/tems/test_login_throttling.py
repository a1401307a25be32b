"""Log-in throttling (django-axes): an account and address are locked out after N wrong passwords."""

import pytest
from django.contrib.auth.models import User
from django.test import Client, RequestFactory

from tems.accounts import client_ip

LIMIT = 3


@pytest.fixture(autouse=True)
def small_limit(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT


def log_in(client: Client, username: str, password: str, *, path: str = "/accounts/login/", address: str = "10.0.0.1"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.django_db
def test_after_n_wrong_passwords_the_right_one_is_refused_with_a_message(student):
    client = Client()
    for _ in range(LIMIT - 1):
        response = log_in(client, "student1", "wrong")
        assert response.status_code == 200 and "Please enter a correct username and password" in response.text
    assert log_in(client, "student1", "wrong").status_code == 429  # the Nth failure locks
    response = log_in(client, "student1", "pw-student-1")
    assert response.status_code == 429
    assert "Log-in paused" in response.text
    assert "Too many wrong passwords for <strong>student1</strong>" in response.text
    assert "paused for 15 minutes" in response.text
    assert response["Retry-After"] == "900"
    assert not signed_in(client)


@pytest.mark.django_db
def test_the_lockout_is_per_account_and_address(student, other_student):
    for _ in range(LIMIT):
        log_in(Client(), "student1", "wrong", address="10.0.0.1")
    # The same student from another address, and another student from the same address, still get in.
    elsewhere, neighbour = Client(), Client()
    assert log_in(elsewhere, "student1", "pw-student-1", address="10.0.0.2").status_code == 302
    assert log_in(neighbour, "student2", "pw-student-2", address="10.0.0.1").status_code == 302
    assert signed_in(elsewhere) and signed_in(neighbour)


@pytest.mark.django_db
def test_a_success_before_the_limit_starts_the_count_again(student):
    client = Client()
    for _ in range(LIMIT - 1):
        log_in(client, "student1", "wrong")
    assert log_in(client, "student1", "pw-student-1").status_code == 302
    client.post("/accounts/logout/")
    for _ in range(LIMIT - 1):
        log_in(client, "student1", "wrong")
    assert log_in(client, "student1", "pw-student-1").status_code == 302


@pytest.mark.django_db
def test_admin_log_in_is_locked_out_too(staff_user):
    client = Client()
    for _ in range(LIMIT):
        log_in(client, "staffer", "wrong", path="/admin/login/")
    response = log_in(client, "staffer", "pw-staff-1", path="/admin/login/")
    assert response.status_code == 429 and "Log-in paused" in response.text
    assert not signed_in(client)
    # The lockout is the account's, whichever log-in page is used.
    assert log_in(client, "staffer", "pw-staff-1").status_code == 429


@pytest.mark.django_db
def test_force_login_and_sign_up_are_not_throttled(client):
    user = User.objects.create_user("plain", "plain@uni.test", "pw-plain-1")
    client.force_login(user)
    assert client.get("/accounts/verify-email/").status_code == 200


def test_client_address_trusts_only_our_own_proxies(settings):
    request = RequestFactory().post("/accounts/login/", REMOTE_ADDR="10.1.1.1",
                                    HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9")
    settings.TEMS_TRUSTED_PROXY_COUNT = 0
    assert client_ip(request) == "10.1.1.1"  # no proxy configured: a client-sent header means nothing
    settings.TEMS_TRUSTED_PROXY_COUNT = 1
    assert client_ip(request) == "203.0.113.9"  # what our balancer saw, not what the client claimed before it
    settings.TEMS_TRUSTED_PROXY_COUNT = 3
    assert client_ip(request) == "10.1.1.1"  # fewer hops than proxies: the request did not come through them
