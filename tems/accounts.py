"""Accounts: proving an e-mail address before TEMS mails it, per-account mail budgets, the accounts of people who
log in through the university's single sign-on (and local accounts linked to it), what Django's database holds
about a person for their export and its erasure, and log-in throttling's view of the client address.

Anyone can sign up with anyone's address, so an unproven address gets exactly one kind of mail: the link that
proves it (and that one is bounded per hour). Every other mail (the outbox relay's notifications) goes only to a
verified address, within its own hourly budget. Accounts live in Django's database, so this module uses the ORM;
the verification mail is sent directly from the request because no DynamoDB change comes with it.
"""

from __future__ import annotations

import logging
import re
import secrets
from datetime import datetime

from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.contenttypes.models import ContentType
from django.contrib.sessions.models import Session
from django.core import signing
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import F
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from tems.errors import DomainError
from tems.models import CalendarFeed, EmailAddress, MailQuota, SingleSignOnIdentity

logger = logging.getLogger(__name__)

# A dedicated salt: a value signed for any other purpose (a session, a CSRF token, ...) never verifies an address.
VERIFICATION_SALT = "tems.accounts.email-verification"
VERIFICATION_MAIL = "verification"
NOTIFICATION_MAIL = "notification"
PASSWORD_RESET_MAIL = "password-reset"
# Django's first_name and last_name columns.
NAME_MAX_CHARS = 150


class AccountError(DomainError):
    """A refusal about an account: a bad or expired link, too many mails."""


# --- mail budget -------------------------------------------------------------------------------------------

def mail_quota_take(*, user: AbstractBaseUser, kind: str, limit: int, now: datetime | None = None) -> bool:
    """Count one mail of ``kind`` to ``user`` in this clock hour if fewer than ``limit`` went out; False if not.

    The check and the count are one conditional UPDATE, so servers racing for the last mail of the hour cannot
    both win. ``limit`` 0 means no bound.
    """
    if limit <= 0:
        return True
    window = (now or timezone.now()).replace(minute=0, second=0, microsecond=0)
    quota, created = MailQuota.objects.get_or_create(user=user, kind=kind, window_start=window)
    if created:
        # Past hours only ever need forgetting; one account's rows stay one per kind.
        MailQuota.objects.filter(user=user, kind=kind, window_start__lt=window).delete()
    return MailQuota.objects.filter(pk=quota.pk, sent__lt=limit).update(sent=F("sent") + 1) == 1


# --- verification ------------------------------------------------------------------------------------------

def email_verification_token(*, user: AbstractBaseUser) -> str:
    """A signed, timestamped token naming the account and the address it proves (expiry is checked on use)."""
    return signing.dumps({"user": user.pk, "email": user.email}, salt=VERIFICATION_SALT, compress=True)


def email_address_verified(*, user: AbstractBaseUser) -> bool:
    """True if the account's current address has been proven (an address changed since is unproven again)."""
    return bool(user.email) and EmailAddress.objects.filter(
        user=user, email=user.email, verified_at__isnull=False).exists()


def email_address_mark_verified(*, user: AbstractBaseUser, now: datetime | None = None) -> None:
    """Record the account's current address as proven (seed_demo's accounts, a verified link)."""
    EmailAddress.objects.update_or_create(user=user, defaults={"email": user.email,
                                                               "verified_at": now or timezone.now()})


def email_verification_send(*, request: HttpRequest, user: AbstractBaseUser) -> None:
    """Mail ``user`` the link that proves their address.

    Raises AccountError('invalid') if the address is already proven or missing, and AccountError('busy') past
    ``TEMS_VERIFICATION_MAILS_PER_HOUR`` (so signing up with a stranger's address and pressing "send again"
    cannot flood them). A failing mail server is AccountError('busy') too: the person can try again.
    """
    if not user.email:
        raise AccountError("invalid", "This account has no e-mail address.")
    if email_address_verified(user=user):
        raise AccountError("invalid", f"{user.email} is verified already.")
    EmailAddress.objects.update_or_create(user=user, defaults={"email": user.email, "verified_at": None})
    if not mail_quota_take(user=user, kind=VERIFICATION_MAIL, limit=settings.TEMS_VERIFICATION_MAILS_PER_HOUR):
        raise AccountError("busy", "We have sent you several links in the last hour already: use the newest one, "
                                   "or ask for another one later.", retry_after=3600)
    link = request.build_absolute_uri(reverse("verify_email_confirm", args=[email_verification_token(user=user)]))
    days = settings.TEMS_EMAIL_VERIFICATION_MAX_AGE.days
    try:
        send_mail(
            "Confirm your e-mail address for TEMS",
            f"Someone, hopefully you, signed up to TEMS as {user.get_username()} with this address.\n\n"
            f"Open this link within {days} day(s) to confirm it, and TEMS will send you your registration "
            f"confirmations:\n\n{link}\n\nIf it was not you, ignore this mail: nothing more will come.",
            settings.DEFAULT_FROM_EMAIL, [user.email],
        )
    except OSError:
        logger.exception("verification mail to account %s failed", user.pk)
        raise AccountError("busy", "We could not send the mail just now; please try again in a minute.",
                           retry_after=60) from None


def email_verify(*, token: str, now: datetime | None = None) -> AbstractBaseUser:
    """Mark the address named by ``token`` as proven; returns the account.

    Raises AccountError('invalid') for a forged, mangled or expired token, or one for an address the account no
    longer uses. Using a link twice is harmless.
    """
    try:
        data = signing.loads(token, salt=VERIFICATION_SALT,
                             max_age=settings.TEMS_EMAIL_VERIFICATION_MAX_AGE)
    except signing.SignatureExpired:
        raise AccountError("invalid", "This link has expired. Log in and ask for a new one.") from None
    except signing.BadSignature:
        raise AccountError("invalid", "This link is not valid. Copy the whole link from the mail, or log in "
                                      "and ask for a new one.") from None
    user = get_user_model().objects.filter(pk=data.get("user")).first() if isinstance(data, dict) else None
    if user is None or not user.email or user.email != data.get("email"):
        raise AccountError("invalid", "This link is for an address the account no longer uses.")
    email_address_mark_verified(user=user, now=now)
    return user


# --- notifications -----------------------------------------------------------------------------------------

def notification_recipient(*, user: AbstractBaseUser) -> str | None:
    """The address to send ``user`` a notification to, or None: unverified, or over this hour's budget.

    Asking spends one mail of the budget, so call it only right before sending.
    """
    if not _may_mail(user=user, kind=NOTIFICATION_MAIL, limit=settings.TEMS_NOTIFICATION_MAILS_PER_HOUR):
        return None
    return user.email


def _may_mail(*, user: AbstractBaseUser, kind: str, limit: int) -> bool:
    """Whether ``user``'s address is proven and this hour's ``kind`` mails are under ``limit`` (spends one)."""
    if not email_address_verified(user=user):
        logger.info("no %s mail to account %s: address not verified", kind, user.pk)
        return False
    if not mail_quota_take(user=user, kind=kind, limit=limit):
        logger.warning("no %s mail to account %s: over %s this hour", kind, user.pk, limit)
        return False
    return True


# --- password reset ----------------------------------------------------------------------------------------

def password_reset_may_mail(*, user: AbstractBaseUser) -> bool:
    """True if ``user`` may be sent a password reset link now; asking spends one mail of the hour's budget.

    Only to a proven address: an address typed at sign-up (a typo, or someone else's on purpose) has shown no
    owner, and a reset link sent there would hand the account to whoever reads it. Within
    ``TEMS_VERIFICATION_MAILS_PER_HOUR`` reset mails an hour, so the public form cannot flood anyone. A refusal
    is only logged: the form answers the same page whether or not a mail went out, so it never tells a stranger
    whether an address has an account.
    """
    return _may_mail(user=user, kind=PASSWORD_RESET_MAIL, limit=settings.TEMS_VERIFICATION_MAILS_PER_HOUR)


# --- names ---------------------------------------------------------------------------------------------------

# Control characters (C0, DEL, C1) and the invisible bidirectional controls: a name with them could reorder or
# hide the text around it on a staff list, and nobody's name needs them.
_NAME_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a first or last name, or None if it can."""
    if _NAME_UNSAFE.search(value):
        return "Use letters, spaces and punctuation only."
    return None


def name_from_claim(value: object) -> str:
    """A provider's name claim as a name TEMS can store: text only, unsafe characters dropped, cut to fit."""
    if not isinstance(value, str):
        return ""
    return " ".join(_NAME_UNSAFE.sub(" ", value).split())[:NAME_MAX_CHARS]


def sso_names_update(*, user: AbstractBaseUser, claims: dict) -> None:
    """Set an SSO account's first and last name from the provider's ``given_name`` and ``family_name``.

    Only an account made by single sign-on (no usable password) takes them, at every log-in: the university
    keeps its names, and its account page shows them rather than offering an edit the next log-in would undo.
    A local account linked to the provider keeps the names its owner typed. A claim that is missing or not text
    leaves the name as it is.
    """
    if user.has_usable_password():
        return
    names = {field: name_from_claim(claims.get(claim)) for field, claim in
             (("first_name", "given_name"), ("last_name", "family_name")) if isinstance(claims.get(claim), str)}
    changed = {field: value for field, value in names.items() if getattr(user, field) != value}
    if changed:
        get_user_model().objects.filter(pk=user.pk).update(**changed)
        for field, value in changed.items():
            setattr(user, field, value)


# --- single sign-on ---------------------------------------------------------------------------------------

# What Django's username validator accepts; anything else in a provider's name becomes a hyphen.
_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]+")


def sso_account_for(*, issuer: str, subject: str, claims: dict) -> AbstractBaseUser:
    """The account of ``subject`` at ``issuer``: the one linked on its first log-in, or a new one linked now.

    Found by the subject alone. The provider's e-mail never finds an account, so a local account with the same
    address is not taken over: the new account is a separate one with no usable password (nothing to reset,
    nothing to guess). Its address counts as proven only if the provider says it verified it. An account found
    here is returned as it is; whether it may log in (a disabled one may not) is the caller's decision.
    Two first log-ins of one subject at once end with one account: the (issuer, subject) pair is unique, and
    the loser returns the winner's account.
    """
    link = SingleSignOnIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    if link is not None:
        return link.user
    email = claims.get("email")
    # Only something shaped like an address fits the column (254 characters, RFC 5321's limit) and can be mailed.
    email = email if isinstance(email, str) and "@" in email and len(email) <= 254 else ""
    for attempt in range(5):
        username = _sso_username(claims, suffixed=attempt > 0)
        try:
            with transaction.atomic():
                user = get_user_model().objects.create_user(
                    username, email=email, password=None, first_name=name_from_claim(claims.get("given_name")),
                    last_name=name_from_claim(claims.get("family_name")))
                SingleSignOnIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        except IntegrityError:
            link = SingleSignOnIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
            if link is not None:
                return link.user
            continue  # the name was taken between the look and the insert: another name
        # Some providers send the boolean as a string.
        if email and claims.get("email_verified") in (True, "true"):
            email_address_mark_verified(user=user)
        return user
    raise AccountError("busy", "We could not create your account just now; please try again.")


def _sso_username(claims: dict, *, suffixed: bool) -> str:
    # The name people see ("Signed in as ..."): the provider's preferred name or the address's local part, else a
    # neutral one. A name a local account already has (in any case) gets a random suffix rather than a lookalike.
    wanted = claims.get("preferred_username") or (claims.get("email") or "").partition("@")[0] or "student"
    base = _USERNAME_UNSAFE.sub("-", str(wanted)).strip("-")[:120] or "student"
    users = get_user_model().objects
    if suffixed or users.filter(username__iexact=base).exists():
        return f"{base}-{secrets.token_hex(3)}"
    return base


# --- linking a local account to single sign-on -----------------------------------------------------------

def sso_link(*, user: AbstractBaseUser, issuer: str, subject: str) -> None:
    """Attach ``subject`` at ``issuer`` to ``user``, a local account its owner is logged in to, so the next log-in
    through the provider finds this account.

    Only the logged-in owner links, by an explicit round trip through the provider (tems.oidc): never an
    address the provider sends. The database decides: the (issuer, subject) pair and the (account, issuer) pair
    are each unique, so a subject is never linked to two accounts nor an account to two subjects of one provider,
    however two links race. Linking the same subject again is harmless. Raises AccountError('conflict') for a
    subject linked to another account, or an account linked to another subject of this provider.
    """
    try:
        with transaction.atomic():
            SingleSignOnIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    except IntegrityError:
        # A read only to explain the refusal.
        holder = SingleSignOnIdentity.objects.filter(issuer=issuer, subject=subject).values_list("user_id", flat=True)
        holder = next(iter(holder), None)
        if holder == user.pk:
            return
        if holder is not None:
            raise AccountError("conflict", "That university account is already linked to another TEMS account. "
                                           "Log in with it instead, or ask the events team.") from None
        raise AccountError("conflict", "Your TEMS account is already linked to another university account.") from None


# --- the calendar feed link ------------------------------------------------------------------------------

# A dedicated salt: no other signed value (a session, an e-mail link) opens a feed, nor a feed token anything else.
CALENDAR_FEED_SALT = "tems.accounts.calendar-feed"
# The most characters of a token worth checking: a real one is a few dozen; anything longer is not ours.
CALENDAR_FEED_TOKEN_MAX_CHARS = 200


def _feed_generation(user_id: int) -> int:
    return CalendarFeed.objects.filter(user_id=user_id).values_list("generation", flat=True).first() or 0


def calendar_feed_token(*, user: AbstractBaseUser) -> str:
    """The token of ``user``'s calendar feed link: the account and its feed generation, signed. It does not
    expire (calendar apps poll for years); ``calendar_feed_revoke`` ends it."""
    return signing.Signer(salt=CALENDAR_FEED_SALT).sign(f"{user.pk}.{_feed_generation(user.pk)}")


def calendar_feed_user(*, token: str) -> AbstractBaseUser:
    """The account whose feed ``token`` opens. Raises AccountError('not_found') for a forged, altered or revoked
    token, and for an account that is gone or may not log in."""
    refused = AccountError("not_found", "This calendar link is not valid: it may have been replaced on the "
                                        "account page. Copy the link from your account page again.")
    if not token or len(token) > CALENDAR_FEED_TOKEN_MAX_CHARS:
        raise refused
    try:
        account, _, generation = signing.Signer(salt=CALENDAR_FEED_SALT).unsign(token).partition(".")
        account_id, generation = int(account), int(generation)
    except (signing.BadSignature, ValueError):
        raise refused from None
    user = get_user_model().objects.filter(pk=account_id, is_active=True).first()
    if user is None or generation != _feed_generation(account_id):
        raise refused
    return user


def calendar_feed_revoke(*, user: AbstractBaseUser) -> None:
    """End every calendar feed link of ``user`` handed out so far: the next token carries the next generation.
    One conditional UPDATE in the database, so two revocations at once both count."""
    CalendarFeed.objects.get_or_create(user=user)
    CalendarFeed.objects.filter(user=user).update(generation=F("generation") + 1)


# --- a person's account data: export and erasure ----------------------------------------------------------

def account_data(*, user: AbstractBaseUser) -> dict:
    """What Django's database holds about ``user``, for the person's own export."""
    address = EmailAddress.objects.filter(user=user).first()
    return {
        "username": user.get_username(),
        "email": user.email,
        "first_name": getattr(user, "first_name", ""),
        "last_name": getattr(user, "last_name", ""),
        "date_joined": user.date_joined.isoformat() if getattr(user, "date_joined", None) else None,
        "last_login": user.last_login.isoformat() if user.last_login else None,
        "email_verified_at": address.verified_at.isoformat() if address and address.verified_at else None,
        "single_sign_on": [{"issuer": link.issuer, "subject": link.subject, "linked_at": link.created_at.isoformat()}
                           for link in SingleSignOnIdentity.objects.filter(user=user).order_by("created_at")],
    }


def _sessions_end(account_id: int) -> int:
    """Delete every session of the account: a session row may hold the provider's ID token, with the person's
    name and address in it. Sessions are stored encoded, so each is decoded to see whose it is."""
    ended = 0
    for session in Session.objects.iterator():
        if str(session.get_decoded().get("_auth_user_id")) == str(account_id):
            ended += session.delete()[0]
    return ended


def account_deactivate(*, account_id: int) -> None:
    """Stop the account acting while it is erased: no log-in, and every session of it ended."""
    get_user_model().objects.filter(pk=account_id).update(is_active=False)
    _sessions_end(account_id)


def account_erase(*, account_id: int) -> None:
    """Delete the account and every row of Django's database about it: its sessions, its log-in throttling
    records (kept by username), admin log entries about it, then the user, whose identity, address, mail quotas
    and single sign-on links go with it. Erasing an account that is gone already does nothing."""
    user = get_user_model().objects.filter(pk=account_id).first()
    _sessions_end(account_id)
    if user is None:
        return
    username = user.get_username()
    with transaction.atomic():
        for model in (AccessAttempt, AccessFailureLog, AccessLog):
            model.objects.filter(username=username).delete()
        LogEntry.objects.filter(content_type=ContentType.objects.get_for_model(user),
                                object_id=str(account_id)).delete()
        user.delete()


# --- log-in throttling -------------------------------------------------------------------------------------

def client_ip(request: HttpRequest) -> str | None:
    """The client's address for django-axes' lockout.

    Behind ``TEMS_TRUSTED_PROXY_COUNT`` proxies of ours, it is the address the outermost of them saw: each proxy
    appends the address it received from to X-Forwarded-For, so entries further left are the client's own claim
    and cannot be trusted. Without trusted proxies, X-Forwarded-For is ignored entirely.
    """
    proxies = settings.TEMS_TRUSTED_PROXY_COUNT
    if proxies > 0:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR")
