"""Websockets only from the portal's own pages: the browser's Origin must be the portal's own
origin (scheme, host AND port, as the CSRF check compares them) or one in
PAI_CSRF_TRUSTED_ORIGINS. A host check alone lets in a page that a job serves on another port of
the portal's host name: cookies ignore ports, so that page would act as the signed-in user.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings

DEFAULT_PORTS = {"http": 80, "https": 443}


def normalized(origin: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(origin.strip())
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    if not parts.hostname or port is None:
        return None
    return parts.scheme.lower(), parts.hostname.lower(), port


def own_origin(scope: dict[str, Any], headers: dict[bytes, bytes]) -> str:
    """The origin the portal is served on for this connection: its scheme (behind a TLS proxy, as
    SECURE_PROXY_SSL_HEADER says) and the Host the browser connected to."""
    secure = scope.get("scheme") in {"wss", "https"}
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        name = proxy_header[0].removeprefix("HTTP_").replace("_", "-").lower().encode()
        secure = secure or headers.get(name, b"").decode("latin-1") == proxy_header[1]
    return f"{'https' if secure else 'http'}://{headers.get(b'host', b'').decode('latin-1')}"


def origin_allowed(scope: dict[str, Any]) -> bool:
    headers = {name.lower(): value for name, value in scope.get("headers") or []}
    origin = normalized(headers.get(b"origin", b"").decode("latin-1"))
    if origin is None:
        return False
    trusted = {normalized(own_origin(scope, headers)), *(normalized(o) for o in settings.CSRF_TRUSTED_ORIGINS)}
    return origin in trusted


class SameOriginValidator:
    """ASGI middleware: denies a websocket whose Origin is not the portal's own."""

    def __init__(self, application: Any):
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
