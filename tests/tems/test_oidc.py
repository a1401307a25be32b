"""Single sign-on through a real OpenID Connect provider (oidc-provider, run by node on 127.0.0.1 by the tests):
the account is found by the provider's subject, never by its e-mail; a disabled account stays out; logging out
ends the TEMS session; and every failure is a message on the log-in page, never a 5xx."""

import uuid
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.core.exceptions import SuspiciousOperation
from django.test import Client
from django.utils.html import escape

from tems import accounts, oidc
from tems.accounts import email_address_verified, sso_account_for
from tems.identity import user_key
from tems.models import SingleSignOnIdentity
from tests.oidc.provider import LocalIdP
from tests.registrations.helpers import make_event

CALLBACK = "http://testserver/accounts/sso/callback/"
LOGIN_PAGE = "http://testserver/accounts/login/"
IDP_ACCOUNTS = {
    "u-1001": {"email": "ada@uni.test", "email_verified": True, "preferred_username": "ada", "given_name": "Ada",
               "family_name": "Lovelace"},
    # Someone at the provider whose address is a local account's: must not get that account.
    "u-6666": {"email": "student1@uni.test", "email_verified": True, "preferred_username": "student1"},
    "u-2002": {"email": "unproven@uni.test", "email_verified": False},
}


@pytest.fixture(scope="module")
def idp():
    with LocalIdP(redirect_uris=[CALLBACK], post_logout_redirect_uris=[LOGIN_PAGE], accounts=IDP_ACCOUNTS) as provider:
        yield provider


@pytest.fixture
def sso(settings, idp):
    settings.TEMS_OIDC_ISSUER = idp.issuer
    settings.TEMS_OIDC_CLIENT_ID = idp.client_id
    settings.TEMS_OIDC_CLIENT_SECRET = idp.client_secret
    settings.TEMS_OIDC_NAME = "Test University"
    return idp


def _sso_log_in(client: Client, idp: LocalIdP, subject: str, *, next_url: str = ""):
    """The whole code flow: TEMS sends the browser to the provider, the person logs in there, and the
    provider's redirect back is followed into TEMS. Returns TEMS's answer to that callback."""
    start = client.get("/accounts/sso/" + (f"?next={next_url}" if next_url else ""))
    assert start.status_code == 302 and start["Location"].startswith(f"{idp.issuer}/"), start
    back = urlsplit(idp.log_in(start["Location"], subject=subject))
    assert f"{back.scheme}://{back.netloc}{back.path}" == CALLBACK
    return client.get(f"{back.path}?{back.query}")


def _logged_in_as(client: Client) -> User | None:
    session_user = client.session.get("_auth_user_id")
    return User.objects.get(pk=session_user) if session_user else None


def _messages(response) -> str:
    return " ".join(str(message) for message in response.wsgi_request._messages)


@pytest.mark.django_db
def test_without_an_issuer_there_is_no_single_sign_on_and_local_log_in_works(client, student, settings):
    settings.TEMS_OIDC_ISSUER = ""
    assert client.get("/accounts/sso/").status_code == 404
    assert client.get("/accounts/sso/callback/?code=x&state=y").status_code == 404
    assert "Log in with" not in client.get("/accounts/login/").content.decode()
    response = client.post("/accounts/login/", {"username": "student1", "password": "pw-student-1"})
    assert response.status_code == 302 and _logged_in_as(client) == student


@pytest.mark.django_db
def test_the_log_in_page_offers_the_university_when_configured(client, sso):
    page = client.get("/accounts/login/?next=/me/registrations/").content.decode()
    assert 'href="/accounts/sso/?next=/me/registrations/"' in page and "Log in with Test University" in page
    assert "Log in with Test University" in client.get("/accounts/signup/").content.decode()


@pytest.mark.django_db
def test_first_log_in_creates_an_account_and_the_next_finds_it_by_subject(client, sso):
    response = _sso_log_in(client, sso, "u-1001", next_url="/me/registrations/")
    assert response.status_code == 302 and response["Location"] == "/me/registrations/"
    user = _logged_in_as(client)
    assert user.username == "ada" and user.email == "ada@uni.test"
    assert not user.has_usable_password()  # SSO only: no password to guess, change or reset
    link = SingleSignOnIdentity.objects.get(user=user)
    assert (link.issuer, link.subject) == (sso.issuer, "u-1001")
    assert email_address_verified(user=user)  # the provider says it verified the address
    key = user_key(user)
    assert str(uuid.UUID(key)) == key

    client.post("/accounts/logout/")
    again = Client()
    assert _sso_log_in(again, sso, "u-1001").status_code == 302
    assert _logged_in_as(again) == user and user_key(_logged_in_as(again)) == key
    assert User.objects.count() == 1 and SingleSignOnIdentity.objects.count() == 1


@pytest.mark.django_db
def test_an_sso_account_takes_its_names_from_the_provider_at_every_log_in(client, sso):
    _sso_log_in(client, sso, "u-1001")
    user = _logged_in_as(client)
    assert (user.first_name, user.last_name) == ("Ada", "Lovelace")
    User.objects.filter(pk=user.pk).update(first_name="Stale", last_name="")
    assert _sso_log_in(Client(), sso, "u-1001").status_code == 302
    user.refresh_from_db()
    assert (user.first_name, user.last_name) == ("Ada", "Lovelace")


@pytest.mark.django_db
def test_an_idp_e_mail_matching_a_local_account_does_not_take_it_over(client, sso, student):
    response = _sso_log_in(client, sso, "u-6666")
    assert response.status_code == 302
    newcomer = _logged_in_as(client)
    assert newcomer != student
    assert newcomer.username != "student1" and newcomer.username.lower().startswith("student1-")
    assert not SingleSignOnIdentity.objects.filter(user=student).exists()
    student.refresh_from_db()
    assert student.check_password("pw-student-1") and student.email == "student1@uni.test"
    local = Client()
    local.post("/accounts/login/", {"username": "student1", "password": "pw-student-1"})
    assert _logged_in_as(local) == student


@pytest.mark.django_db
def test_an_unverified_idp_address_is_kept_but_not_proven(client, sso):
    _sso_log_in(client, sso, "u-2002")
    user = _logged_in_as(client)
    assert user.email == "unproven@uni.test" and not email_address_verified(user=user)
    assert user.username == "unproven"


@pytest.mark.django_db
def test_a_disabled_account_stays_disabled(client, sso):
    _sso_log_in(client, sso, "u-1001")
    user = _logged_in_as(client)
    user.is_active = False
    user.save()
    assert client.get("/accounts/verify-email/").status_code == 302  # its session no longer counts

    retry = Client()
    response = _sso_log_in(retry, sso, "u-1001")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert "did not succeed" in _messages(response)
    assert _logged_in_as(retry) is None
    user.refresh_from_db()
    assert not user.is_active and User.objects.count() == 1


@pytest.mark.django_db
def test_logging_out_ends_the_tems_session_and_then_the_one_at_the_provider(client, sso):
    _sso_log_in(client, sso, "u-1001")
    session_key = client.session.session_key
    id_token = client.session["oidc_id_token"]
    assert client.get("/accounts/verify-email/").status_code == 200
    response = client.post("/accounts/logout/")
    assert not Session.objects.filter(session_key=session_key).exists()
    stale = Client()
    stale.cookies["sessionid"] = session_key
    assert stale.get("/accounts/verify-email/").status_code == 302

    # The page that says so takes the browser on to the provider's log-out.
    assert response.status_code == 200 and "You are logged out of TEMS" in response.content.decode()
    onward = response.context["provider_logout_url"]
    assert f'content="0;url={escape(onward)}"' in response.content.decode()
    at_provider = urlsplit(onward)
    assert f"{at_provider.scheme}://{at_provider.netloc}{at_provider.path}" == \
        oidc.provider_metadata()["end_session_endpoint"]
    assert parse_qs(at_provider.query) == {"id_token_hint": [id_token], "client_id": [sso.client_id],
                                           "post_logout_redirect_uri": [LOGIN_PAGE]}
    # The provider takes the hint and the way back, and sends the browser to the log-in page.
    assert sso.log_out(onward) == LOGIN_PAGE


@pytest.mark.django_db
def test_a_local_session_logs_out_without_asking_the_provider(client, sso, student):
    client.post("/accounts/login/", {"username": "student1", "password": "pw-student-1"})
    oidc._discover.cache_clear()
    response = client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert _logged_in_as(client) is None and oidc._discover.cache_info().misses == 0


@pytest.mark.django_db
def test_a_replayed_or_forged_callback_is_a_message_not_a_session(client, sso):
    start = client.get("/accounts/sso/")
    back = urlsplit(sso.log_in(start["Location"], subject="u-1001"))
    assert client.get(f"{back.path}?{back.query}").status_code == 302
    client.post("/accounts/logout/")
    client.get("/accounts/sso/")  # a fresh log-in started, so the session has states, just not that one
    replay = client.get(f"{back.path}?{back.query}")
    assert replay.status_code == 302 and replay["Location"] == "/accounts/login/"
    assert _logged_in_as(client) is None
    forged = Client().get("/accounts/sso/callback/?code=made-up&state=made-up")
    assert forged.status_code == 302 and forged["Location"] == "/accounts/login/"


@pytest.mark.django_db
@pytest.mark.parametrize("setting, value", [("TEMS_OIDC_CLIENT_ID", "another-client"),
                                            ("TEMS_OIDC_ISSUER", "https://another-issuer.test")])
def test_an_id_token_for_another_client_or_from_another_issuer_is_refused(client, sso, settings, monkeypatch,
                                                                          setting, value):
    _sso_log_in(client, sso, "u-1001")
    id_token = client.session["oidc_id_token"]
    nonce = jwt.decode(id_token, options={"verify_signature": False})["nonce"]
    backend = oidc.OidcBackend()
    assert backend.verify_token(id_token, nonce=nonce)["sub"] == "u-1001"  # signed, fresh, ours
    # The same provider's keys still check the signature; only whom TEMS expects changes.
    monkeypatch.setattr(oidc, "provider_metadata", lambda: oidc._discover(sso.issuer))
    setattr(settings, setting, value)
    with pytest.raises(SuspiciousOperation, match="another provider or for another client"):
        backend.verify_token(id_token, nonce=nonce)


@pytest.mark.django_db
def test_a_wrong_client_secret_fails_at_the_token_exchange_with_a_message(client, sso, settings):
    settings.TEMS_OIDC_CLIENT_SECRET = "not-the-secret"
    response = _sso_log_in(client, sso, "u-1001")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert "did not succeed" in _messages(response)
    assert _logged_in_as(client) is None and not User.objects.exists()


@pytest.mark.django_db
def test_an_unreachable_provider_is_a_message_and_password_log_in_never_waits_on_it(client, settings, student):
    settings.TEMS_OIDC_ISSUER = "http://127.0.0.1:9/unreachable"
    settings.TEMS_OIDC_CLIENT_ID, settings.TEMS_OIDC_CLIENT_SECRET = "tems", "secret"
    response = client.get("/accounts/sso/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert "not available just now" in _messages(response)
    oidc._discover.cache_clear()
    client.post("/accounts/login/", {"username": "student1", "password": "pw-student-1"})
    assert _logged_in_as(client) == student
    assert client.get("/accounts/verify-email/").status_code == 200
    assert oidc._discover.cache_info().misses == 0  # nobody asked the provider


@pytest.mark.django_db
def test_discovery_must_name_the_configured_issuer(settings, sso):
    oidc._discover.cache_clear()
    assert oidc.provider_metadata()["issuer"] == sso.issuer
    with pytest.raises(oidc.ProviderUnavailable, match="another issuer"):
        oidc._discover(sso.issuer + "/")  # the document says the issuer without the slash


@pytest.mark.django_db
def test_the_loser_of_two_first_log_ins_gets_the_winners_account(monkeypatch):
    winner = User.objects.create_user("winner")
    naming = accounts._sso_username

    def name_after_a_concurrent_first_log_in(claims, *, suffixed):
        # The other request's insert lands between this one's look-up and its own insert.
        SingleSignOnIdentity.objects.get_or_create(issuer="https://idp.test", subject="s-1", defaults={"user": winner})
        return naming(claims, suffixed=suffixed)

    monkeypatch.setattr(accounts, "_sso_username", name_after_a_concurrent_first_log_in)
    user = sso_account_for(issuer="https://idp.test", subject="s-1", claims={"preferred_username": "late"})
    assert user == winner
    assert not User.objects.filter(username="late").exists()
    assert SingleSignOnIdentity.objects.count() == 1


@pytest.mark.django_db
def test_an_sso_account_registers_under_its_own_user_key(client, sso, ddb):
    _sso_log_in(client, sso, "u-1001")
    event = make_event(capacity=3)
    response = client.post(f"/api/events/{event.event_id}/registrations", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    assert response.status_code == 201, response.content
    mine = client.get("/api/me/registrations").json()["registrations"]
    assert [r["registration_id"] for r in mine] == [response.json()["registration_id"]]


@pytest.mark.django_db
def test_failed_sso_log_ins_lock_out_neither_a_local_account_nor_the_next_sso_student(client, sso, student,
                                                                                       settings):
    # A campus shares few addresses: failures there must not shut everyone behind them out.
    settings.TEMS_OIDC_CLIENT_SECRET = "not-the-secret"
    for _ in range(settings.AXES_FAILURE_LIMIT + 1):
        assert _sso_log_in(Client(), sso, "u-1001")["Location"] == "/accounts/login/"
    client.post("/accounts/login/", {"username": "student1", "password": "pw-student-1"})
    assert _logged_in_as(client) == student
    settings.TEMS_OIDC_CLIENT_SECRET = sso.client_secret
    next_student = Client()
    assert _sso_log_in(next_student, sso, "u-2002")["Location"] == "/events/"
    assert _logged_in_as(next_student).username == "unproven"


@pytest.mark.django_db
@pytest.mark.parametrize("claims, email, proven", [
    ({"email": "kim@uni.test", "email_verified": "true"}, "kim@uni.test", True),
    ({"email": "kim@uni.test", "email_verified": "false"}, "kim@uni.test", False),
    ({"email": "kim@uni.test"}, "kim@uni.test", False),
    ({"email": "not an address", "email_verified": True}, "", False),
    ({"email": "k" * 250 + "@uni.test", "email_verified": True}, "", False),
])
def test_only_a_plausible_address_is_kept_and_only_a_verified_one_is_proven(claims, email, proven):
    user = sso_account_for(issuer="https://idp.test", subject="s-9", claims=claims)
    assert user.email == email and email_address_verified(user=user) is proven


@pytest.mark.django_db
def test_staff_see_the_links_in_the_admin(staff_user, client, sso):
    _sso_log_in(client, sso, "u-1001")
    staff_user.is_superuser = True
    staff_user.save()
    admin = Client()
    admin.force_login(staff_user)
    page = admin.get("/admin/tems/singlesignonidentity/")
    assert page.status_code == 200 and "u-1001" in page.content.decode()


# --- linking a local account -------------------------------------------------------------------------------

def _link(client: Client, idp: LocalIdP, subject: str):
    """The account page's "Link university account": the POST, the provider's log-in, and the way back."""
    start = client.post("/accounts/sso/link/")
    assert start.status_code == 302 and start["Location"].startswith(f"{idp.issuer}/"), start
    back = urlsplit(idp.log_in(start["Location"], subject=subject))
    return client.get(f"{back.path}?{back.query}")


@pytest.mark.django_db
def test_a_local_account_is_linked_by_its_owner_and_then_found_by_subject(client, sso, student):
    client.force_login(student)
    page = client.get("/accounts/").content.decode()
    assert "Link university account" in page
    key = user_key(student)

    response = _link(client, sso, "u-1001")

    assert response.status_code == 302 and response["Location"] == "/accounts/"
    assert "linked" in _messages(response)
    link = SingleSignOnIdentity.objects.get(user=student)
    assert (link.issuer, link.subject) == (sso.issuer, "u-1001")
    assert "Link university account" not in client.get("/accounts/").content.decode()
    # The next SSO log-in, from another browser, finds this very account, with its data.
    other = Client()
    assert _sso_log_in(other, sso, "u-1001").status_code == 302
    assert _logged_in_as(other) == student and user_key(_logged_in_as(other)) == key
    assert User.objects.count() == 1


@pytest.mark.django_db
def test_a_subject_linked_to_another_account_is_refused(client, sso, student, other_student):
    first = Client()
    first.force_login(other_student)
    _link(first, sso, "u-1001")
    client.force_login(student)

    response = _link(client, sso, "u-1001")

    assert response.status_code == 302 and response["Location"] == "/accounts/"
    assert "already linked to another" in _messages(response)
    assert SingleSignOnIdentity.objects.get(subject="u-1001").user == other_student
    assert not SingleSignOnIdentity.objects.filter(user=student).exists()
    assert _logged_in_as(client) == student  # still logged in as themself, not as the subject's account


@pytest.mark.django_db
def test_an_account_links_one_subject_of_a_provider(client, sso, student):
    client.force_login(student)
    _link(client, sso, "u-1001")
    accounts.sso_link(user=student, issuer=sso.issuer, subject="u-1001")  # again: harmless
    with pytest.raises(accounts.AccountError) as refused:
        accounts.sso_link(user=student, issuer=sso.issuer, subject="u-2002")
    assert refused.value.code == "conflict"
    assert list(SingleSignOnIdentity.objects.filter(user=student).values_list("subject", flat=True)) == ["u-1001"]


@pytest.mark.django_db
def test_linking_needs_a_logged_in_post_and_a_link_intent(client, sso, student):
    assert client.post("/accounts/sso/link/")["Location"].startswith("/accounts/login/")
    client.force_login(student)
    assert client.get("/accounts/sso/link/").status_code == 405
    # A plain SSO log-in from a logged-in browser (no link asked) never attaches the subject to this account.
    response = _sso_log_in(client, sso, "u-1001")
    assert response.status_code == 302
    assert not SingleSignOnIdentity.objects.filter(user=student).exists()


@pytest.mark.django_db
def test_the_link_button_is_absent_while_single_sign_on_is_off(client, student, settings):
    settings.TEMS_OIDC_ISSUER = ""
    client.force_login(student)
    assert "Link university account" not in client.get("/accounts/").content.decode()
    assert client.post("/accounts/sso/link/").status_code == 404
