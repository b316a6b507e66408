"""Issuing, checking and revoking API tokens (the only code that writes Token rows)."""

from __future__ import annotations

import base64
import json
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from accounts.models import Token, hash_token
from queries.prepared import Prepared

TOKEN_PREFIX = "pai_"  # noqa: S105  (a marker, not a secret)
# Writing last_used on every request would turn each read into a write; once a minute is enough.
LAST_USED_GRANULARITY = timedelta(seconds=60)
# Every API request reads its token: compiled once (no ORDER BY: the unique index answers).
_TOKEN_BY_HASH: Prepared[Token] = Prepared(
    lambda key_hash: Token.objects.select_related("user").filter(key_hash=key_hash).order_by()[:1], str
)


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
    token = _TOKEN_BY_HASH.first(hash_token(raw))
    now = timezone.now()
    if token is None or token.expires <= now or not token.user.is_active:
        return None
    if token.last_used is None or now - token.last_used > LAST_USED_GRANULARITY:
        Token.objects.filter(pk=token.pk).update(last_used=now)
        token.last_used = now
    return token


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).rstrip(b"=").decode()


def token_handle(token: Token) -> str:
    """What OpenPAI's token list gives in place of the token: an unsigned JWT its clients decode
    (jwt.decode, no verification) for {username, application, iat, exp} and send back to revoke.
    Only hashes are stored, so it carries the token's id, never a usable credential."""
    claims = {
        "username": token.user.get_username(),
        "application": token.kind == Token.Kind.APPLICATION,
        "iat": int(token.created.timestamp()),
        "exp": int(token.expires.timestamp()),
        "id": token.pk,
        "prefix": token.key_prefix,
    }
    return f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(claims)}."


def _id_of_handle(handle: str) -> int | None:
    parts = handle.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        return int(claims["id"])
    except (ValueError, TypeError, KeyError):
        return None


def _token_id(text: str) -> int | None:
    """The row id a revoke names (digits, or the id in a handle); None when no row can have it."""
    token_id = int(text) if text.isdigit() and len(text) < 19 else _id_of_handle(text)
    return token_id if token_id is not None and 0 <= token_id < 2**63 else None


def revoke_token(user: Any, raw_or_id: str) -> bool:
    """Delete one of the user's tokens, named by its raw value, its id or its handle; True when one went."""
    mine = Token.objects.filter(user=user)
    deleted, _ = mine.filter(key_hash=hash_token(raw_or_id)).delete()
    token_id = _token_id(raw_or_id)
    if not deleted and token_id is not None:
        deleted, _ = mine.filter(pk=token_id).delete()
    return bool(deleted)


def purge_expired_tokens(user: Any = None) -> int:
    """Delete expired tokens (of one user, or everyone's); login calls it so the table stays small."""
    expired = Token.objects.filter(expires__lte=timezone.now())
    deleted, _ = (expired.filter(user=user) if user is not None else expired).delete()
    return deleted
