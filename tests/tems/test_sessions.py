"""What a session promises: logging out, changing the password or being deactivated ends it on the server, so an
old cookie replayed afterwards is worth nothing (Django's database sessions, and the log-in backend that joins
the student's identity into the per-request user read, tems.identity.IdentityModelBackend).
"""

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.http import HttpRequest
from django.test import Client
from django.utils import timezone

from tems.identity import IdentityModelBackend, UserIdentity, user_key

PASSWORD = "pw-sessions-2026"


@pytest.fixture
def member(db) -> User:
    return User.objects.create_user("member", password=PASSWORD)


def _logged_in(username: str = "member") -> Client:
    client = Client()
    client.get("/accounts/login/")
    response = client.post("/accounts/login/", {"username": username, "password": PASSWORD})
    assert response.status_code == 302
    return client


def _replay(cookie: str) -> Client:
    """A second browser holding a copy of someone's session cookie (what a thief would hold)."""
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = cookie
    return client


def _user_for(cookie: str):
    request = HttpRequest()
    request.session = SessionStore(cookie)
    return auth.get_user(request)


def test_the_engine_is_the_database_one():
    # Not signed cookies: a logged-out cookie must be worth nothing on every server.
    assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.db"


def test_a_logged_in_cookie_names_its_user(member):
    key = _logged_in().cookies[settings.SESSION_COOKIE_NAME].value
    assert SessionStore(key).load()[auth.SESSION_KEY] == str(member.pk)
    assert _user_for(key) == member


def test_log_out_ends_the_session_on_the_server(member):
    client = _logged_in()
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert _user_for(cookie) == member
    assert client.post("/accounts/logout/").status_code == 302
    assert not Session.objects.filter(session_key=cookie).exists()
    assert _user_for(cookie).is_anonymous
    assert _replay(cookie).get("/api/me/registrations").status_code == 401


def test_a_password_change_ends_other_sessions(member):
    cookie = _logged_in().cookies[settings.SESSION_COOKIE_NAME].value
    member.set_password("another-pw-2026")
    member.save()
    assert _user_for(cookie).is_anonymous
    assert _replay(cookie).get("/api/me/registrations").status_code == 401


def test_a_deactivated_user_is_logged_out(member):
    cookie = _logged_in().cookies[settings.SESSION_COOKIE_NAME].value
    User.objects.filter(pk=member.pk).update(is_active=False)
    assert _user_for(cookie).is_anonymous
    assert _replay(cookie).get("/api/me/registrations").status_code == 401


def test_a_deleted_user_is_logged_out(member):
    cookie = _logged_in().cookies[settings.SESSION_COOKIE_NAME].value
    member.delete()
    assert _user_for(cookie).is_anonymous


def test_an_expired_session_is_no_session(member):
    cookie = _logged_in().cookies[settings.SESSION_COOKIE_NAME].value
    Session.objects.filter(session_key=cookie).update(expire_date=timezone.now() - timedelta(seconds=1))
    store = SessionStore(cookie)
    assert store.load() == {}
    assert store.session_key is None  # as Django's store: saving it would make a new key, never reuse this one
    assert _user_for(cookie).is_anonymous


@pytest.mark.parametrize("cookie", ["", "short", "x" * 40, "' OR 1=1 --abcdef", "a" * 5000])
def test_unknown_or_hostile_session_keys_are_no_session(db, cookie):
    assert SessionStore(cookie).load() == {}
    assert _user_for(cookie).is_anonymous


def test_the_session_and_the_user_cost_two_queries_and_the_key_none(member, django_assert_num_queries):
    cookie = _logged_in().cookies[settings.SESSION_COOKIE_NAME].value
    expected = user_key(member)
    with django_assert_num_queries(2):
        user = _user_for(cookie)
    with django_assert_num_queries(0):
        assert user_key(user) == expected


def test_the_user_read_brings_the_identity(member):
    user_key(member)
    loaded = IdentityModelBackend().get_user(member.pk)
    assert loaded == member and loaded.tems_identity.key == UserIdentity.objects.get(user=member).key
    assert loaded.is_active is True and loaded.date_joined.tzinfo is not None


def test_a_user_without_an_identity_yet_gets_one_on_first_use(member):
    assert not UserIdentity.objects.filter(user=member).exists()
    loaded = IdentityModelBackend().get_user(member.pk)
    key = user_key(loaded)
    assert key == str(UserIdentity.objects.get(user=member).key)


@pytest.mark.parametrize("user_id", [None, "not-a-number", 10**12])
def test_no_such_user_is_none(db, user_id):
    assert IdentityModelBackend().get_user(user_id) is None
