"""Who a person is to the domain: an immutable key, never their username.

Everything TEMS stores about a person in DynamoDB (registrations, claims, idempotency records, write-rate
counters) is keyed by ``user_key(user)``, a random UUID kept in Django's database next to the account and
deleted with it. A username is only a display name: Django lets a deleted user's name be taken again, and data
keyed by the name would pass to whoever takes it (see docs/registrations.md, "Who owns a registration").
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import ValidationError
from django.db import DatabaseError, models

_CACHE_ATTRIBUTE = "_tems_user_key"


class UserIdentity(models.Model):
    """One row per account, made on first use; its key is never reused, because it is never derived."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tems_identity")
    key = models.UUIDField(unique=True, default=uuid.uuid4, editable=False)

    class Meta:
        app_label = "tems"

    def __str__(self) -> str:
        return f"{self.user_id}: {self.key}"


def user_key(user) -> str:
    """The immutable key of a logged-in ``user`` for every piece of domain data.

    Made on first use (an account created before identities existed, or by any path that creates users, gets
    one the same way); ``get_or_create`` relies on the unique ``user`` column, so two first requests at once
    end with one row. Cached on the user object for the rest of the request.
    """
    cached = getattr(user, _CACHE_ATTRIBUTE, None)
    if cached is None:
        identity = _joined_identity(user) or _identity_for(user)
        cached = str(identity.key)
        setattr(user, _CACHE_ATTRIBUTE, cached)
    return cached


def known_user_key(user) -> str | None:
    """``user_key(user)`` when it costs no query (already read in this request, or joined into the user's read),
    else None: for a log line, which must not read the database."""
    cached = getattr(user, _CACHE_ATTRIBUTE, None)
    if cached is not None:
        return cached
    identity = _joined_identity(user)
    return str(identity.key) if identity is not None else None


class IdentityModelBackend(ModelBackend):
    """Django's ModelBackend whose user comes with its identity, joined in: ``user_key`` then costs no query.

    Every request of a logged-in user reads the user; without the join the first ``user_key`` of the request
    read the identity too, a second SQL query on every write's path. A deactivated user is refused here, as by
    ModelBackend; a changed password ends the session in ``django.contrib.auth.get_user``, which compares the
    session's hash with this fresh row's.
    """

    def get_user(self, user_id):
        user_model = get_user_model()
        try:
            user = user_model._default_manager.select_related("tems_identity").get(pk=user_id)
        except (user_model.DoesNotExist, ValidationError, ValueError, TypeError):
            # Not a key this model can have is no such user either (a tampered or foreign session).
            return None
        return user if self.user_can_authenticate(user) else None


def _joined_identity(user) -> UserIdentity | None:
    # Only what a select_related already fetched: reading ``user.tems_identity`` otherwise would be a query.
    state = getattr(user, "_state", None)
    return state.fields_cache.get("tems_identity") if state is not None else None


def user_for_key(key: str):
    """The account that owns ``key``, or None (deleted, or a synthetic lab/bench student that never had one)."""
    try:
        parsed = uuid.UUID(str(key))
    except ValueError:
        return None
    identity = UserIdentity.objects.select_related("user").filter(key=parsed).first()
    return identity.user if identity else None


def _parsed_keys(keys: list[str]) -> set[uuid.UUID]:
    # A lab or bench student's key is no UUID and has no account: it is left out, not an error.
    parsed = set()
    for key in keys:
        try:
            parsed.add(uuid.UUID(str(key)))
        except ValueError:
            continue
    return parsed


def user_names_for_keys(keys: list[str]) -> dict[str, str]:
    """Usernames by key for the keys that still have an account, in one query (for lists staff read)."""
    identities = UserIdentity.objects.select_related("user").filter(key__in=_parsed_keys(keys))
    return {str(identity.key): identity.user.get_username() for identity in identities}


def user_full_names_for_keys(keys: list[str]) -> dict[str, tuple[str, str]]:
    """(first name, last name) by key for the keys whose account has a name, in one query (for lists staff
    read). Read when the list is shown, never copied into the table: a changed name shows at once, and an
    erased account's name is gone with its row."""
    parsed = _parsed_keys(keys)
    if not parsed:
        return {}
    rows = UserIdentity.objects.filter(key__in=parsed).values_list("key", "user__first_name", "user__last_name")
    return {str(key): (first, last) for key, first, last in rows if first or last}


def display_names_for_keys(keys: Iterable[str]) -> dict[str, str]:
    """The name to show by key (full name, else username) for the keys that still have an account: one query."""
    parsed = _parsed_keys(list(keys))
    if not parsed:
        return {}
    rows = UserIdentity.objects.filter(key__in=parsed).values_list(
        "key", "user__first_name", "user__last_name", "user__username")
    return {str(key): f"{first} {last}".strip() or username for key, first, last, username in rows}


def _identity_for(user) -> UserIdentity:
    # A new account's first taps arrive together (a double click): two get_or_create calls race to insert the
    # row, and the loser's insert fails (IntegrityError, or SQLite's "database is locked"). The row exists by
    # then, or a moment later, so read it again instead of answering 500.
    for attempt in range(5):
        try:
            return UserIdentity.objects.get_or_create(user=user)[0]
        except DatabaseError:
            if attempt == 4:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def user_keys_matching(text: str, *, limit: int) -> tuple[list[str], bool]:
    """The keys of up to ``limit`` accounts whose first name, last name or username starts with every word of
    ``text`` (case-insensitive, any order: "ann sm" finds Ann Smith), and whether more accounts matched.

    One SQL query (of ``limit + 1`` rows). Names live only here (docs/privacy.md, "Names"), so a search by name
    starts here and the caller looks the keys up in DynamoDB by key.
    """
    words = text.split()
    if not words:
        return [], False
    query = UserIdentity.objects.all()
    for word in words:
        query = query.filter(models.Q(user__first_name__istartswith=word) | models.Q(user__last_name__istartswith=word)
                             | models.Q(user__username__istartswith=word))
    keys = [str(key) for key in query.order_by("user__last_name", "user__first_name", "user__username")
            .values_list("key", flat=True)[:limit + 1]]
    return keys[:limit], len(keys) > limit
