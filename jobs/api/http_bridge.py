"""Plain HTTP for an ASGI server through Django's WSGI handler, one worker thread per request.

Why: every view of the portal is synchronous. Under Django's ASGI handler each sync middleware
costs two thread hops (process_request and process_response each go through sync_to_async),
about 3-4 ms per request on this machine against 0.7 ms for the same request through the WSGI
handler. This bridge reads the body on the event loop, runs the whole request (middleware, view,
response iteration, request_finished) in one pool thread, and streams the chunks back.
asgiref's WsgiToAsgi does the same job but breaks under concurrent requests
("CurrentThreadExecutor already quit or is broken"), hence this small version.

Wiring (pai_portal/asgi.py): `"http": WsgiHttpBridge(get_wsgi_application())`; websockets stay
on Channels.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# Bodies up to this size stay in memory; larger ones (file uploads) spill to a temporary file.
SPOOL_BYTES = 1024 * 1024
# At most this many response chunks wait for the event loop: a slow client slows the thread.
WINDOW_CHUNKS = 8
_DONE = object()


def build_environ(scope: dict[str, Any], body: Any) -> dict[str, Any]:
    """PEP 3333 environ from an ASGI HTTP scope (paths and query as latin-1 "bytes in str")."""
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": scope.get("root_path", "").encode("utf-8").decode("latin-1"),
        "PATH_INFO": scope["path"].encode("utf-8").decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] or 80),
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        key = name if name in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{name}"
        if key in environ:
            environ[key] += ("; " if key == "HTTP_COOKIE" else ",") + value
        else:
            environ[key] = value
    return environ


async def read_body(receive: Callable[[], Any]) -> tuple[Any, bool]:
    """The request body in a spooled file; (file, False) when the client went away first."""
    body = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+b")  # noqa: SIM115  (the request owns it)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            body.close()
            return body, False
        body.write(message.get("body", b""))
        if not message.get("more_body", False):
            body.seek(0)
            return body, True


class WsgiHttpBridge:
    # Few threads: on SQLite, threads of one process queue on the write lock through SQLite's
    # sleeping busy handler (bench/api.py: 2 workers x 2 threads beat 2 x 16 on 2 CPUs).
    def __init__(self, wsgi_app: WsgiApp, threads: int = 2):
        self.wsgi_app = wsgi_app
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http")

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
        if scope["type"] != "http":
            raise ValueError(f"WsgiHttpBridge serves HTTP only, not {scope['type']!r}")
        body, connected = await read_body(receive)
        if not connected:
            return
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        window = threading.Semaphore(WINDOW_CHUNKS)
        started: list[tuple[int, list[tuple[bytes, bytes]]]] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., None]:
            encoded = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
            started[:] = [(int(status.split(" ", 1)[0]), encoded)]
            return lambda data: None  # the legacy write() callable: Django never uses it

        def run() -> None:
            """The whole request in this one thread, so request_finished closes its DB connections."""
            try:
                result = self.wsgi_app(build_environ(scope, body), start_response)
                try:
                    for chunk in result:
                        if chunk:
                            window.acquire()
                            loop.call_soon_threadsafe(queue.put_nowait, bytes(chunk))
                finally:
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
            except BaseException as error:  # reported on the loop: a 500 if nothing was sent yet
                loop.call_soon_threadsafe(queue.put_nowait, error)
            finally:
                body.close()
                loop.call_soon_threadsafe(queue.put_nowait, _DONE)

        loop.run_in_executor(self.executor, run)
        sent_start = False
        while True:
            item = await queue.get()
            if isinstance(item, BaseException):
                if not sent_start:
                    await send({"type": "http.response.start", "status": 500, "headers": []})
                    sent_start = True
                continue
            if not sent_start:
                status, headers = started[0] if started else (500, [])
                await send({"type": "http.response.start", "status": status, "headers": headers})
                sent_start = True
            if item is _DONE:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await send({"type": "http.response.body", "body": item, "more_body": True})
            window.release()
