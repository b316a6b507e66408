"""Cookies on an app's origin: the proxy's own (passes.SESSION_COOKIE) among the app's, read
leniently, and what the app may set.

- Reading: the browser's Cookie header is `name=value` pieces split at `;`, each read as Django's
  parse_cookie reads it (the way browsers write them): a piece that is no valid cookie costs only
  itself. (http.cookies stops at the first one it cannot parse: an app's `prefs={"a":1}` before
  ours hid ours, and every request went back to sign in, for as long as that cookie lived.) Every
  cookie of our name is tried, so one planted before ours does not hide it.
- The app gets the browser's pieces as they came, ours left out.
- Setting: an app may not set a cookie of our name, nor one for another host: a Domain attribute,
  however spelled (any case, spaces around `=`), is taken out, so the cookie stays the app's own
  host's (one for the apps' parent domain would reach every app and could shadow its cookies).
"""

from __future__ import annotations

from collections.abc import Iterator

from django.http.cookie import parse_cookie

from web.app_proxy import passes


def pieces(header: str) -> list[str]:
    """The header's `name=value` pieces, each as the browser sent it."""
    return [piece.strip() for piece in header.split(";") if piece.strip()]


def values_named(header: str, name: str) -> Iterator[str]:
    for piece in pieces(header):
        yield from (value for key, value in parse_cookie(piece).items() if key == name)


def session_pass(header: str, slug: str) -> passes.Pass | None:
    """The proxy's pass for this app, from the first cookie of its name that holds one."""
    for value in values_named(header, passes.SESSION_COOKIE):
        if (granted := passes.read_session(value, slug)) is not None:
            return granted
    return None


def for_the_app(header: str) -> str:
    """The browser's cookies for the app: all of them but ours, as they came."""
    return "; ".join(piece for piece in pieces(header) if passes.SESSION_COOKIE not in parse_cookie(piece))


def set_by_the_app(value: bytes) -> bytes | None:
    """The app's Set-Cookie as the browser may have it: None for one named as ours, else without
    any Domain attribute."""
    pair, *attributes = value.split(b";")
    name = pair.split(b"=", 1)[0].strip() if b"=" in pair else b""  # RFC 6265bis: no `=`, no name
    if name == passes.SESSION_COOKIE.encode():
        return None
    kept = [attribute for attribute in attributes if attribute.split(b"=", 1)[0].strip().lower() != b"domain"]
    return b";".join([pair, *kept])
