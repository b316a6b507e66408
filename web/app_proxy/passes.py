"""How a signed-in user of the portal gets into an app at its own origin, which shares no cookie
with the portal: the portal's Open view hands the browser a ticket (signed, for one app and one
user, good for TICKET_S seconds and once), which the proxy trades for its own session cookie on
the app's origin (signed, for that app only, HttpOnly). Both are Django's signing; the one-time
rule is the cache's `add`."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

from django.core import signing
from django.core.cache import cache

TICKET_SALT = "pai.app-proxy.ticket"
SESSION_SALT = "pai.app-proxy.session"
TICKET_S = 60
SESSION_S = 12 * 3600
SESSION_COOKIE = "pai-app-session"
SIGN_IN_PATH = "/.pai/sign-in"


@dataclass(frozen=True)
class Pass:
    slug: str
    user_id: int


def ticket_for(slug: str, user_id: int) -> str:
    return signing.dumps({"a": slug, "u": user_id, "n": secrets.token_hex(8)}, salt=TICKET_SALT)


def sign_in_url(origin: str, slug: str, user_id: int, next_path: str) -> str:
    return f"{origin}{SIGN_IN_PATH}?" + urlencode({"ticket": ticket_for(slug, user_id), "next": safe_next(next_path)})


def redeem_ticket(ticket: str, slug: str) -> Pass | None:
    """The ticket's user for this app, once; None when forged, expired, used or for another app."""
    data = _signed_for(ticket, slug, TICKET_SALT, TICKET_S)
    if data is None or not cache.add(f"pai-app-ticket:{data.get('n')}", 1, TICKET_S * 2):  # (used before)
        return None
    return Pass(slug, data["u"])


def session_value(granted: Pass) -> str:
    return signing.dumps({"a": granted.slug, "u": granted.user_id}, salt=SESSION_SALT)


def read_session(value: str | None, slug: str) -> Pass | None:
    data = _signed_for(value or "", slug, SESSION_SALT, SESSION_S)
    return Pass(slug, data["u"]) if data is not None else None


def _signed_for(value: str, slug: str, salt: str, max_age: int) -> dict | None:
    """What a ticket or a session says, when it is genuine, fresh and for this app."""
    try:
        data = signing.loads(value, salt=salt, max_age=max_age)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict) or data.get("a") != slug or not isinstance(data.get("u"), int):
        return None
    return data


def safe_next(path: str) -> str:
    """A path on the app's own origin: never another host (`//evil`, `/\\evil`, a scheme)."""
    if not path.startswith("/") or path.startswith(("//", "/\\")) or any(c in path for c in "\r\n\t"):
        return "/"
    return path
