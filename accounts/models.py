"""API tokens: only their SHA-256 is stored, so a leaked database leaks no usable token."""

import hashlib

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


class Token(models.Model):
    class Kind(models.TextChoices):
        LOGIN = "login", _("Login")  # from /authn/basic/login or /v1/token: short-lived, full rights
        APPLICATION = "application", _("Application")  # for scripts: long-lived, never admin operations

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    key_hash = models.CharField(max_length=64, unique=True)
    # The first characters of the token, shown on the profile page so a user can tell tokens apart.
    key_prefix = models.CharField(max_length=16)
    name = models.CharField(max_length=128, blank=True, default="")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.LOGIN)
    created = models.DateTimeField(auto_now_add=True)
    expires = models.DateTimeField(db_index=True)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["user", "-created"], name="token_user_created")]

    def __str__(self) -> str:
        return f"{self.user} {self.kind} {self.key_prefix}…"


class NotificationPreference(models.Model):
    """When a user wants to hear that their jobs ended (OpenPAI's alert manager mailed owners).
    A job's own `extras.jobStatusChangeNotification` overrides it (jobs.notifications)."""

    class When(models.TextChoices):
        NEVER = "never", _("Never")
        FAILED = "failed", _("When a job fails")
        ENDED = "ended", _("When a job ends (succeeded, failed or stopped)")

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification")
    email = models.CharField(max_length=8, choices=When.choices, default=When.NEVER)
    browser = models.BooleanField(default=False, help_text="A browser notification while the portal is open.")
    # Monday's email of last week's usage, idle share and failed jobs (scheduling.weekly_report).
    weekly_report = models.BooleanField(default=True)

    def __str__(self) -> str:
        return f"{self.user}: email {self.email}, browser {self.browser}"


class SshPublicKey(models.Model):
    """A public key of the user's own (OpenPAI's profile "SSH Public Keys"): every task of every
    job of theirs accepts it (jobs.ssh.info.authorized_keys_for). Only public halves are kept."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ssh_keys")
    title = models.CharField(max_length=128, blank=True, default="")
    key = models.TextField(help_text=_("One OpenSSH public key line, as read back by asyncssh."))
    fingerprint = models.CharField(max_length=128)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "id"]
        constraints = [models.UniqueConstraint(fields=["user", "fingerprint"], name="ssh_key_once_per_user")]

    def __str__(self) -> str:
        return f"{self.user} {self.title or self.fingerprint}"


class Account(models.Model):
    """Where a user comes from and whether they are an admin by hand. A user's admin rights are
    that flag or an admin group's (accounts.groups.apply_admin keeps is_staff/is_superuser so)."""

    class Source(models.TextChoices):
        LOCAL = "local", _("Local")
        LDAP = "ldap", "LDAP"
        OIDC = "oidc", "OIDC"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account")
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.LOCAL)
    admin_by_hand = models.BooleanField(default=False)
    # The directory's groups at the last sign-in (shown on the users page).
    synced_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user} ({self.source})"


class GroupInfo(models.Model):
    """OpenPAI's group beside Django's: its description, its name in the directory (externalName),
    whether it makes admins (acls.admin), and where it came from. The VCs and storages it grants
    are VirtualCluster.allowed_groups and StorageConfig.allowed_groups."""

    group = models.OneToOneField("auth.Group", on_delete=models.CASCADE, related_name="info")
    description = models.CharField(max_length=512, blank=True, default="")
    external_name = models.CharField(max_length=512, blank=True, default="", db_index=True)
    admin = models.BooleanField(default=False)
    source = models.CharField(max_length=8, choices=Account.Source.choices, default=Account.Source.LOCAL)

    def __str__(self) -> str:
        return str(self.group)


class AuditEntry(models.Model):
    """One change an admin (or a sign-in's sync) made to users, groups or their grants."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    actor_name = models.CharField(max_length=150)  # kept when the actor is deleted
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=200)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_name} {self.action} {self.target}"

    def detail_text(self) -> str:
        """`key=value; ...` with lists as `a, b` (— when empty): the audit list's Details column."""
        shown = (
            f"{key}={', '.join(map(str, value)) or '—'}" if isinstance(value, list) else f"{key}={value}"
            for key, value in self.detail.items()
        )
        return "; ".join(shown)
