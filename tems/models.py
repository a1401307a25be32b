"""``UserIdentity`` is the one Django model of ``tems``. The shared table models live in their own modules;
importing them here registers them with Django's start-up.

The Django models at the end (accounts' verified addresses and mail quotas, single sign-on links, and the organizer
teams with their members' roles) live in Django's own database.

``tems.dynamo.configure_models`` also configures ``TableMeta`` itself, so a model imported later still inherits
the configuration; this import only makes start-up order not matter for the ones we know of.
"""

import json

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from tems.audit.models import AuditEntry
from tems.idempotency import IdempotencyRecord
from tems.identity import UserIdentity
from tems.outbox import OutboxMessage
from tems.ratelimit import WriteRateCounter
from tems.roles import ROLES

__all__ = ["AuditEntry", "CalendarFeed", "DoorAssignment", "EmailAddress", "IdempotencyRecord", "MailQuota",
           "Membership", "OutboxMessage", "SingleSignOnIdentity", "Team", "TeamAuditEntry",
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


# --- Organizer teams (Django's own database: read once per staff request, never on a student's path) -------
class Team(models.Model):
    """An organizer (a department, a society, the stores): it owns events and inventory items, which carry its
    ``id`` as their ``team``. Its name is what pages and the API show as the organizer."""

    # The id events and items store: id-shaped (tems.ids), so it travels in paths and keys as it is.
    id = models.CharField(primary_key=True, max_length=64)
    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A society's events start as drafts that students cannot see until an approver of ``overseen_by`` publishes
    # them (registrations.approvals.services); only a platform admin sets these two (tems.teams.services).
    needs_approval = models.BooleanField(default=False)
    overseen_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="oversees")
    # How long the team's audit log keeps an entry (the entry's TTL is set from it when written). A month at least,
    # so a retention set by mistake cannot wipe yesterday's log; ten years at most.
    audit_retention_days = models.PositiveIntegerField(
        default=settings.TEMS_AUDIT_RETENTION_DAYS,
        validators=[MinValueValidator(settings.TEMS_AUDIT_RETENTION_MIN_DAYS),
                    MaxValueValidator(settings.TEMS_AUDIT_RETENTION_MAX_DAYS)])

    class Meta:
        ordering = ["name"]
        constraints = [
            # Approval without an approving team would leave every draft waiting for nobody.
            models.CheckConstraint(condition=models.Q(needs_approval=False) | models.Q(overseen_by__isnull=False),
                                   name="team_approval_has_an_overseer"),
            models.CheckConstraint(condition=~models.Q(overseen_by=models.F("id")), name="team_not_its_own_overseer"),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A person's one role in one team (tems.permissions.ROLES says what each role may do)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=32, choices=list(ROLES.items()))

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="membership_one_role_per_team")]

    def __str__(self) -> str:
        return f"user {self.user_id}: {self.role} of {self.team_id}"


class DoorAssignment(models.Model):
    """A door volunteer let in at one event of their team; removing the member removes their doors."""

    membership = models.ForeignKey(Membership, on_delete=models.CASCADE, related_name="doors")
    event_id = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["membership", "event_id"], name="door_assignment_once")]

    def __str__(self) -> str:
        return f"membership {self.membership_id} at event {self.event_id}"


class TeamAuditEntry(models.Model):
    """One entry of a team's audit log about the team itself (a member added, a role changed, a member removed, door
    volunteers assigned, the log's retention): written in the same database transaction as the change. Who acted
    and on whom are user keys (tems.identity), named when the log is shown, so an erased account's name is gone
    with its row."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="audit_entries")
    at = models.DateTimeField(db_index=True)
    actor = models.CharField(max_length=64)
    role = models.CharField(max_length=32, blank=True)
    action = models.CharField(max_length=32)
    subject = models.CharField(max_length=64, blank=True)
    event_id = models.CharField(max_length=64, blank=True)
    # JSON as text, not a JSONField: that field asks the database whether it supports JSON while Django's system
    # checks run, so `check --deploy` (run where no database is reachable) would need one.
    before_json = models.TextField(blank=True)
    after_json = models.TextField(blank=True)
    request_id = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["team", "-at"], name="team_audit_newest_first")]

    def __str__(self) -> str:
        return f"{self.team_id}: {self.action} by {self.actor} at {self.at:%Y-%m-%d %H:%M}"

    @property
    def before(self) -> dict | None:
        return json.loads(self.before_json) if self.before_json else None

    @property
    def after(self) -> dict | None:
        return json.loads(self.after_json) if self.after_json else None
