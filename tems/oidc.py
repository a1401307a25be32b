"""Log-in through the university's OpenID Connect provider, on mozilla-django-oidc.

Only ``TEMS_OIDC_ISSUER`` and the client's id and secret are configured: the provider's endpoints come from its
discovery document, read on the first SSO log-in of a process (never at import or start-up) and kept while the
process lives. The library does the code flow (state, nonce, PKCE, the token exchange, the ID token's signature
against the provider's published keys); TEMS adds what it leaves open: the token's issuer and audience are
checked, userinfo must describe the same subject, and the account is found by that subject
(``tems.accounts.sso_account_for``), never by e-mail. A logged-in local account is linked to its owner's subject
only by an explicit round trip the owner starts (``OidcLinkView``; ``tems.accounts.sso_link``).
"""

from __future__ import annotations

import functools
import logging
from urllib.parse import urlencode

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import redirect, render, resolve_url
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from tems import accounts
from tems.identity import IdentityModelBackend

logger = logging.getLogger(__name__)

DISCOVERY_PATH = "/.well-known/openid-configuration"
# The session key of a link round trip's intent (the account id), and where the callback keeps it for the backend.
LINK_SESSION_KEY = "tems_sso_link_account"
LINK_REQUEST_ATTRIBUTE = "tems_sso_link_account"
_ENDPOINTS = ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")


class ProviderUnavailable(Exception):
    """The provider's discovery document could not be read, or does not describe the configured issuer."""


def enabled() -> bool:
    return bool(settings.TEMS_OIDC_ISSUER)


def provider_metadata() -> dict:
    """The configured provider's discovery document (read once per process and issuer)."""
    return _discover(settings.TEMS_OIDC_ISSUER)


@functools.lru_cache(maxsize=4)
def _discover(issuer: str) -> dict:
    # A failure raises, and lru_cache keeps no result for it: the next log-in tries again.
    try:
        response = requests.get(issuer.rstrip("/") + DISCOVERY_PATH, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        metadata = response.json()
    except (requests.RequestException, ValueError) as error:
        raise ProviderUnavailable(f"discovery at {issuer} failed: {error}") from error
    # The document must speak for exactly the issuer configured (OpenID Connect Discovery, section 4.3), or a
    # redirected or spoofed document could substitute another provider's endpoints and keys.
    if not isinstance(metadata, dict) or metadata.get("issuer") != issuer:
        raise ProviderUnavailable(f"discovery at {issuer} names another issuer")
    missing = [name for name in _ENDPOINTS if not metadata.get(name)]
    if missing:
        raise ProviderUnavailable(f"discovery at {issuer} lacks {', '.join(missing)}")
    return metadata


def provider_logout_url(request) -> str | None:
    """Where to send a single sign-on session's browser after TEMS logs it out: the provider's RP-initiated
    log-out, so the next person at a shared computer is not logged straight back in. None for a local session,
    while SSO is off, or if the provider offers no log-out (or cannot be asked): the TEMS session ends anyway.
    Call it before the session ends, as it reads the ID token the log-in kept there.
    """
    id_token = request.session.get("oidc_id_token")
    if not enabled() or not id_token:
        return None
    try:
        endpoint = provider_metadata().get("end_session_endpoint")
    except ProviderUnavailable:
        logger.warning("single sign-on log-out: provider unavailable, only the TEMS session ended")
        return None
    if not endpoint:
        return None
    back = request.build_absolute_uri(resolve_url(settings.LOGOUT_REDIRECT_URL))
    query = urlencode({"id_token_hint": id_token, "client_id": settings.TEMS_OIDC_CLIENT_ID,
                       "post_logout_redirect_uri": back})
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


class OidcBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend, with its endpoints from discovery and the account found by subject.

    ``authenticate`` takes only the callback's keywords (``nonce``, ``code_verifier``), so Django never offers it
    a password log-in, and it answers nothing while SSO is off. Every later request reads the user as
    ``IdentityModelBackend`` does: identity joined in, a disabled account logged out.
    """

    def __init__(self, *args, **kwargs):
        # The library reads every endpoint here; Django builds a backend for every log-in and session read, and
        # neither may wait on the provider, so the endpoints are read from discovery only when used.
        self.UserModel = get_user_model()

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: provider_metadata()["token_endpoint"])
    OIDC_OP_USER_ENDPOINT = property(lambda self: provider_metadata()["userinfo_endpoint"])
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: provider_metadata()["jwks_uri"])
    OIDC_RP_CLIENT_ID = property(lambda self: settings.TEMS_OIDC_CLIENT_ID)
    OIDC_RP_CLIENT_SECRET = property(lambda self: settings.TEMS_OIDC_CLIENT_SECRET)
    OIDC_RP_SIGN_ALGO = property(lambda self: settings.OIDC_RP_SIGN_ALGO)
    OIDC_RP_IDP_SIGN_KEY = None

    def authenticate(self, request, *, nonce, code_verifier=None):
        if not enabled():
            return None
        return super().authenticate(request, nonce=nonce, code_verifier=code_verifier)

    def verify_token(self, token, **kwargs):
        payload = super().verify_token(token, **kwargs)
        # The library checks the signature and the nonce but not who issued the token or for whom.
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if payload.get("iss") != settings.TEMS_OIDC_ISSUER or settings.TEMS_OIDC_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token issued by another provider or for another client")
        if not payload.get("sub"):
            raise SuspiciousOperation("ID token without a subject")
        return payload

    def get_or_create_user(self, access_token, id_token, payload):
        claims = self.get_userinfo(access_token, id_token, payload)
        # OpenID Connect Core 5.3.2: userinfo about anyone but the token's subject must not be used.
        if claims.get("sub") != payload["sub"]:
            raise SuspiciousOperation("userinfo describes another subject than the ID token")
        linking = getattr(self.request, LINK_REQUEST_ATTRIBUTE, None)
        if linking is not None:
            # The round trip a logged-in owner started from their account page: this subject is theirs now.
            if not self.request.user.is_authenticated or self.request.user.pk != linking:
                raise SuspiciousOperation("a link started by another session")
            accounts.sso_link(user=self.request.user, issuer=settings.TEMS_OIDC_ISSUER, subject=payload["sub"])
            return self.request.user
        user = accounts.sso_account_for(issuer=settings.TEMS_OIDC_ISSUER, subject=payload["sub"], claims=claims)
        if not self.user_can_authenticate(user):
            return None
        # What the library's update_user is for: the provider's names, as they are at this log-in.
        accounts.sso_names_update(user=user, claims=claims)
        return user

    def get_user(self, user_id):
        return IdentityModelBackend().get_user(user_id)


def _failed(request, message: str) -> HttpResponseRedirect:
    messages.error(request, message)
    return redirect("login")


class OidcStartView(OIDCAuthenticationRequestView):
    """Send the browser to the provider's log-in; 404 while SSO is off."""

    def __init__(self, *args, **kwargs):
        # The library reads the authorization endpoint here; it is read at the request instead.
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.TEMS_OIDC_CLIENT_ID

    def get(self, request):
        if not enabled():
            raise Http404("Single sign-on is not configured.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider_metadata()["authorization_endpoint"]
        except ProviderUnavailable:
            logger.exception("single sign-on unavailable")
            return _failed(request, f"Log-in with {settings.TEMS_OIDC_NAME} is not available just now. Please try "
                                    "again in a few minutes.")
        return super().get(request)


class OidcCallbackView(OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back: the code becomes a TEMS session, or a message on the log-in
    page (an expired or replayed link, a refused or disabled account, an unreachable provider), never a 5xx.

    After a "link" round trip (``OidcLinkView``) the subject is attached to the logged-in account instead, and
    the answer is a message on the account page."""

    def get(self, request):
        if not enabled():
            raise Http404("Single sign-on is not configured.")
        # One round trip only: the link intent is used (or dropped) by the callback that follows it.
        setattr(request, LINK_REQUEST_ATTRIBUTE, request.session.pop(LINK_SESSION_KEY, None))
        try:
            return super().get(request)
        except accounts.AccountError as error:
            if getattr(request, LINK_REQUEST_ATTRIBUTE) is None:
                logger.warning("single sign-on log-in refused: %s", error)
                return self.login_failure()
            messages.error(request, error.detail)
            return redirect("account")
        except (requests.RequestException, ProviderUnavailable, SuspiciousOperation, jwt.PyJWTError) as error:
            logger.warning("single sign-on log-in refused: %s", error)
            return self.login_failure()

    def login_success(self):
        response = super().login_success()
        if getattr(self.request, LINK_REQUEST_ATTRIBUTE, None) is not None:
            messages.success(self.request, f"Your account is linked to {settings.TEMS_OIDC_NAME}: from now on you "
                                           f"can log in with it.")
        return response

    def login_failure(self):
        if getattr(self.request, LINK_REQUEST_ATTRIBUTE, None) is not None:
            messages.error(self.request, f"Linking your {settings.TEMS_OIDC_NAME} account did not succeed. Please "
                                         "try again.")
            return redirect("account")
        return _failed(self.request, f"Log-in with {settings.TEMS_OIDC_NAME} did not succeed. Please try again; "
                                     "if it keeps failing, ask the events team.")


class OidcLinkView(OidcStartView):
    """"Link university account" on the account page: a POST by the logged-in owner (CSRF-checked), then the
    same round trip through the provider as a log-in, whose callback attaches the subject to this account.

    The intent is kept in this session under the account's id, so the callback links only for the account that
    asked, and only once."""

    http_method_names = ["post"]

    def post(self, request):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not enabled():
            raise Http404("Single sign-on is not configured.")
        request.session[LINK_SESSION_KEY] = request.user.pk
        response = self.get(request)
        # Back to the account page afterwards, whatever the log-in's own "next" was.
        request.session["oidc_login_next"] = resolve_url("account")
        return response


class LogoutView(auth_views.LogoutView):
    """Django's log-out, which deletes the TEMS session on the server; then, for a single sign-on session, a page
    that takes the browser on to the provider's log-out, which sends it back to the log-in page."""

    def post(self, request, *args, **kwargs):
        at_provider = provider_logout_url(request)
        response = super().post(request, *args, **kwargs)
        if at_provider is None:
            return response
        return render(request, "registration/logged_out_sso.html", {"provider_logout_url": at_provider})
