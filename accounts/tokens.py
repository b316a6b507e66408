"""Issuing, checking and revoking API tokens (the only code that writes Token rows)."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from accounts.models import Token, hash_token

TOKEN_PREFIX = "pai_"  # noqa: S105  (a marker, not a secret)
# Writing last_used on every request would turn each read into a write; once a minute is enough.
LAST_USED_GRANULARITY = timedelta(seconds=60)


def issue_token(
    user: Any, kind: str = Token.Kind.LOGIN, *, name: str = "", lifetime_s: int | None = None
) -> tuple[str, Token]:
    """Create a token; returns the raw value (shown once, never stored) and its row."""
    if lifetime_s is None:
        lifetime_s = (
            settings.PAI_API_LOGIN_TOKEN_SECONDS if kind == Token.Kind.LOGIN else settings.PAI_API_APP_TOKEN_SECONDS
        )
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = Token.objects.create(
        user=user,
        key_hash=hash_token(raw),
        key_prefix=raw[: len(TOKEN_PREFIX) + 6],
        name=name[:128],
        kind=kind,
        expires=timezone.now() + timedelta(seconds=lifetime_s),
    )
    return raw, token


def find_valid_token(raw: str) -> Token | None:
    """The live token for this raw value (user active, not expired), or None."""
    # No ORDER BY (the unique index answers): this runs on every API request.
    found = Token.objects.select_related("user").filter(key_hash=hash_token(raw)).order_by()[:1]
    token = next(iter(found), None)
    now = timezone.now()
    if token is None or token.expires <= now or not token.user.is_active:
        return None
    if token.last_used is None or now - token.last_used > LAST_USED_GRANULARITY:
        Token.objects.filter(pk=token.pk).update(last_used=now)
        token.last_used = now
    return token


def revoke_token(user: Any, raw_or_id: str) -> bool:
    """Delete one of the user's tokens, named by its raw value or its id; True when one went."""
    mine = Token.objects.filter(user=user)
    deleted, _ = mine.filter(key_hash=hash_token(raw_or_id)).delete()
    if not deleted and raw_or_id.isdigit() and len(raw_or_id) < 19:  # a longer number is no id (nor fits one)
        deleted, _ = mine.filter(pk=int(raw_or_id)).delete()
    return bool(deleted)


def purge_expired_tokens(user: Any = None) -> int:
    """Delete expired tokens (of one user, or everyone's); login calls it so the table stays small."""
    expired = Token.objects.filter(expires__lte=timezone.now())
    deleted, _ = (expired.filter(user=user) if user is not None else expired).delete()
    return deleted
