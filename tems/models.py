"""``UserIdentity`` is the one Django model of ``tems``. The shared table models live in their own modules;
importing them here registers them with Django's start-up.

The Django models at the end (accounts' verified addresses and mail quotas) live in Django's own database.

``tems.dynamo.configure_models`` also configures ``TableMeta`` itself, so a model imported later still inherits
the configuration; this import only makes start-up order not matter for the ones we know of.
"""

from django.conf import settings
from django.db import models

from tems.idempotency import IdempotencyRecord
from tems.identity import UserIdentity
from tems.outbox import OutboxMessage
from tems.ratelimit import WriteRateCounter

__all__ = ["CalendarFeed", "EmailAddress", "IdempotencyRecord", "MailQuota", "OutboxMessage", "SingleSignOnIdentity",
           "UserIdentity", "WriteRateCounter"]


# --- Accounts (Django's own database, beside the users they belong to) --------------------------------------
class EmailAddress(models.Model):
    """The address an account has proven it reads. TEMS mails an account only while this matches ``user.email``."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="email_address")
    email = models.EmailField()
    verified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "e-mail addresses"

    def __str__(self) -> str:
        return f"{self.email} ({'verified' if self.verified_at else 'unverified'})"


class MailQuota(models.Model):
    """Mails of one kind sent to one account in one clock hour; the database's conditional UPDATE is the limit."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=32)
    window_start = models.DateTimeField()
    sent = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "kind", "window_start"], name="mail_quota_one_per_hour")]

    def __str__(self) -> str:
        return f"{self.kind} mails to user {self.user_id} from {self.window_start:%Y-%m-%d %H:00}: {self.sent}"


class SingleSignOnIdentity(models.Model):
    """The account a person at an OpenID Connect provider logs in to: found by the provider's stable subject.

    Never by e-mail: a provider's address may be unverified, reassigned or simply the same as a local account's,
    and none of those may hand that account over. The pair is unique, so one person at one provider has exactly
    one account however many first log-ins race.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities")
    issuer = models.CharField(max_length=255)
    # OpenID Connect caps a subject at 255 ASCII characters.
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_one_per_subject"),
                       # A local account linked to the provider is linked to one person there (tems.accounts.sso_link).
                       models.UniqueConstraint(fields=["user", "issuer"], name="sso_identity_one_per_account")]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer} -> user {self.user_id}"


class CalendarFeed(models.Model):
    """The generation of an account's calendar feed link: the link signs it, so raising it ("revoke" on the account
    page) kills every link handed out before. No row is generation 0."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="calendar_feed")
    generation = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"calendar feed of user {self.user_id}: generation {self.generation}"
