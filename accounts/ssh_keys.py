"""A user's own SSH public keys: read with a real parser (asyncssh), kept in OpenSSH's one-line form."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from accounts.models import SshPublicKey
from queries.prepared import Prepared

MAX_KEY_CHARS = 16 * 1024
MAX_KEYS_PER_USER = 50


class KeyRefused(ValueError):
    """Why a key was not added, for the page beside its field (already translated)."""


@dataclass(frozen=True)
class ParsedKey:
    line: str  # `ssh-ed25519 AAAA... comment`
    fingerprint: str  # SHA256:...
    comment: str


def parse_public_key(text: str) -> ParsedKey:
    """One public key (OpenSSH line or RFC 4716 block); a private key, two keys or garbage refused."""
    text = (text or "").strip()
    if not text:
        raise KeyRefused(_("Paste a public key, e.g. the contents of ~/.ssh/id_ed25519.pub."))
    if len(text) > MAX_KEY_CHARS:
        raise KeyRefused(_("The key is longer than %(limit)d characters.") % {"limit": MAX_KEY_CHARS})
    if "PRIVATE KEY" in text:
        raise KeyRefused(_("This is a private key: paste the public one (the .pub file) and keep this secret."))
    import asyncssh  # (here, not at the top: every Django start imports this module, few read a key)

    try:
        keys = asyncssh.import_public_key(text) if "\n" not in text or "BEGIN SSH2" in text else None
    except (asyncssh.KeyImportError, ValueError):
        keys = None
    if keys is None:
        raise KeyRefused(
            _("This is not one SSH public key in OpenSSH format (ssh-ed25519 AAAA... or ssh-rsa AAAA...).")
        )
    comment = keys.get_comment() or ""
    line = keys.export_public_key("openssh").decode().strip()
    return ParsedKey(line=line, fingerprint=keys.get_fingerprint("sha256"), comment=comment)


def add_key(user: Any, text: str, title: str = "") -> SshPublicKey:
    parsed = parse_public_key(text)
    if SshPublicKey.objects.filter(user=user).count() >= MAX_KEYS_PER_USER:
        raise KeyRefused(_("You have %(n)d keys, the most one may keep: remove one first.") % {"n": MAX_KEYS_PER_USER})
    title = (title or "").strip()[:128] or parsed.comment[:128]
    try:
        with transaction.atomic():
            return SshPublicKey.objects.create(user=user, title=title, key=parsed.line, fingerprint=parsed.fingerprint)
    except IntegrityError:
        raise KeyRefused(_("This key is in your profile already.")) from None


def remove_key(user: Any, key_id: int) -> bool:
    deleted, _rows = SshPublicKey.objects.filter(user=user, pk=key_id).delete()
    return deleted > 0


# Read for every task the scheduler starts: compiled once (queries.prepared).
_KEY_LINES: Prepared[str] = Prepared(
    lambda user_id: SshPublicKey.objects.filter(user_id=user_id).values_list("key", flat=True), int
)


def public_key_lines(user: Any) -> list[str]:
    return _KEY_LINES(user.pk)
