"""Domain data belongs to an immutable user key, so a username taken again inherits nothing (issue 14, finding 6)."""

import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client

from registrations.models import Registration
from tems.identity import IdentityModelBackend, UserIdentity, user_for_key, user_key
from tems.outbox import outbox_relay
from tests.helpers import assert_problem
from tests.registrations.helpers import make_event


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _register(client: Client, event_id: str) -> dict:
    response = client.post(f"/api/events/{event_id}/registrations", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.django_db
def test_a_key_is_made_once_and_never_derived_from_the_name():
    user = User.objects.create_user("ann")
    key = user_key(user)
    assert str(uuid.UUID(key)) == key and "ann" not in key
    assert user_key(User.objects.get(pk=user.pk)) == key  # stored, not recomputed
    assert user_for_key(key) == user
    user.delete()
    assert not UserIdentity.objects.exists()  # deleted with the account
    assert user_for_key(key) is None
    assert user_key(User.objects.create_user("ann")) != key


def test_a_recreated_username_sees_and_cancels_none_of_the_old_registrations(moto_ddb, django_user_model):
    event = make_event(capacity=5)
    old = django_user_model.objects.create_user("sam", "sam@uni.test")
    first = _register(_client(old), event.event_id)
    assert first["user"] == "sam"  # the API still shows the name
    assert Registration.get(*Registration.user_key_for(user_key(old), first["registration_id"]))
    old.delete()

    newcomer = django_user_model.objects.create_user("sam", "other-sam@uni.test")
    client = _client(newcomer)
    assert client.get("/api/me/registrations").json()["registrations"] == []
    page = client.get("/me/registrations/")
    assert page.status_code == 200 and first["registration_id"] not in page.content.decode()
    event_page = client.get(f"/events/{event.event_id}/").content.decode()
    assert first["registration_id"] not in event_page  # no QR code, no cancel form of the old registration
    assert_problem(client.delete(f"/api/registrations/{first['registration_id']}",
                                 HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4())), 404)
    response = client.post(f"/registrations/{first['registration_id']}/cancel/",
                           {"idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 404
    # The old registration is untouched, and the newcomer registers on their own.
    assert Registration.get(*Registration.event_key_for(event.event_id, first["registration_id"])).status
    assert _register(client, event.event_id)["registration_id"] != first["registration_id"]


def test_relay_mails_the_key_holder_not_whoever_has_the_name_now(moto_ddb, django_user_model, mailoutbox):
    event = make_event(capacity=5)
    old = django_user_model.objects.create_user("kim", "kim@uni.test")
    _register(_client(old), event.event_id)
    old.delete()
    django_user_model.objects.create_user("kim", "new-kim@uni.test")
    report = outbox_relay()
    assert report.delivered == 1 and mailoutbox == []  # handled: the key's owner is gone, nobody is mailed


def test_the_log_in_backend_joins_the_identity_so_the_key_costs_no_query(db, django_assert_num_queries):
    user = User.objects.create_user("joined", password="pw-joined-123")
    expected = user_key(user)
    loaded = IdentityModelBackend().get_user(user.pk)
    with django_assert_num_queries(0):
        assert user_key(loaded) == expected
    newcomer = User.objects.create_user("no-identity-yet")  # no identity row: made on first use, as before
    assert user_key(IdentityModelBackend().get_user(newcomer.pk)) == str(UserIdentity.objects.get(user=newcomer).key)


def test_a_password_log_in_is_remembered_with_the_joining_backend(db):
    User.objects.create_user("logs-in", password="pw-logs-in-123")
    client = Client()
    client.get("/accounts/login/")
    response = client.post("/accounts/login/", {"username": "logs-in", "password": "pw-logs-in-123"})
    assert response.status_code == 302
    assert client.session["_auth_user_backend"] == "tems.identity.IdentityModelBackend"
