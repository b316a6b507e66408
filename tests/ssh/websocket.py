"""Helpers to talk to the portal's ASGI app over a websocket, as a browser would."""

from __future__ import annotations

import time
from typing import Any

from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

ORIGIN = b"http://127.0.0.1:8000"


def session_cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def socket_path(job: Any, role: str = "worker", index: int = 0, cols: int = 80, rows: int = 24) -> str:
    return f"/ws/jobs/{job.full_name}/terminal/{role}/{index}/?cols={cols}&rows={rows}"


def communicator(path: str, cookie: str | None = None, origin: bytes | None = ORIGIN) -> WebsocketCommunicator:
    from pai_portal.asgi import application

    headers = [(b"host", b"127.0.0.1:8000")]
    if origin is not None:
        headers.append((b"origin", origin))
    if cookie is not None:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def read_until(comm: WebsocketCommunicator, needle: bytes, timeout: float = 10.0) -> bytes:
    """Terminal output until `needle` shows up (raises on timeout or close)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{needle!r} not seen; got {seen[-500:]!r}")
        message = await comm.receive_output(timeout=left)
        if message["type"] == "websocket.close":
            raise AssertionError(f"closed ({message.get('code')}) before {needle!r}; got {seen[-500:]!r}")
        seen += message.get("bytes") or (message.get("text") or "").encode()
    return seen


async def read_until_closed(comm: WebsocketCommunicator, timeout: float = 15.0) -> tuple[bytes, int | None]:
    seen = b""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"still open; got {seen[-500:]!r}")
        try:
            message = await comm.receive_output(timeout=left)
        except TimeoutError as exc:
            raise AssertionError(f"still open; got {seen[-500:]!r}") from exc
        if message["type"] == "websocket.close":
            return seen, message.get("code")
        seen += message.get("bytes") or b""
