"""HTTP serving that a slow or stalled client cannot hold: an ASGI layer between the server and
the request threads that run Django's WSGI handler (a2wsgi).

- Files (task logs, static files: Django's FileResponse) are not streamed by a request thread.
  The WSGI side hands the open file over through `wsgi.file_wrapper` and returns at once; this
  layer then streams it on the event loop, where a client that does not read costs a coroutine
  and the server's bounded send buffer, not a thread.
- Write timeout: a body chunk the client has not taken within PAI_HTTP_WRITE_TIMEOUT seconds
  ends the response (the server closes the connection).
- Read timeout: a request body that stalls for PAI_HTTP_READ_TIMEOUT seconds is cut short, so
  the request thread waiting for it fails fast instead of waiting forever. Request headers are
  timed by the server itself (granian's header read timeout, see `manage.py serve`).
"""

from __future__ import annotations

import asyncio
import contextvars
import io
import os
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any
from wsgiref.util import FileWrapper

from a2wsgi.wsgi import Body, WSGIMiddleware, WSGIResponder, build_environ

FILE_SCOPE_KEY = "pai.file_to_stream"
CHUNK_BYTES = 256 * 1024
Message = dict[str, Any]
AsgiApp = Callable[..., Any]


class FileHandOff:
    """`wsgi.file_wrapper` whose iteration yields nothing: a duplicate of the file travels in the
    ASGI scope to TimeoutsAndFileStreaming, which streams it once the (empty) WSGI body ends.
    The request thread closes the original as usual (Django's request_finished runs there)."""

    def __init__(self, scope: dict[str, Any], file: IO[bytes], descriptor: int) -> None:
        scope[FILE_SCOPE_KEY] = os.fdopen(descriptor, "rb")
        self.close = file.close  # WSGI servers call close() on what the app returned

    def __iter__(self) -> Iterator[bytes]:
        return iter(())


def _file_wrapper(scope: dict[str, Any]) -> Callable[..., Iterable[bytes]]:
    def wrap(file: IO[bytes], block_size: int = CHUNK_BYTES) -> Iterable[bytes]:
        try:
            descriptor = os.dup(file.fileno())
        except (AttributeError, OSError, io.UnsupportedOperation):  # not a real file: stream it here
            return FileWrapper(file, block_size)
        return FileHandOff(scope, file, descriptor)

    return wrap


def hand_off_files(wsgi_app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """The WSGI app with a file wrapper that hands files to the ASGI layer (a2wsgi puts the ASGI
    scope in the environ as `asgi.scope`)."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        scope = environ.get("asgi.scope")
        if scope is not None:
            environ["wsgi.file_wrapper"] = _file_wrapper(scope)
        return wsgi_app(environ, start_response)

    return app


class TimeoutsAndFileStreaming:
    """ASGI middleware for HTTP scopes: read/write timeouts and streaming of handed-off files."""

    def __init__(self, app: AsgiApp, *, read_timeout: float, write_timeout: float) -> None:
        self.app = app
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout

    async def __call__(self, scope: dict[str, Any], receive: AsgiApp, send: AsgiApp) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def timed_receive() -> Message:
            try:
                return await asyncio.wait_for(receive(), self.read_timeout)
            except TimeoutError:
                return {"type": "http.disconnect"}  # the request thread sees the body end here

        declared_length: list[int | None] = [None]

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                declared_length[0] = content_length(message)
                return await send(message)
            if FILE_SCOPE_KEY in scope and not message.get("more_body", False):
                await self._stream(scope.pop(FILE_SCOPE_KEY), declared_length[0], send)
            await self._send_in_time(send, message)

        try:
            await self.app(scope, timed_receive, timed_send)
        finally:
            if FILE_SCOPE_KEY in scope:  # the response failed before its file was streamed
                scope.pop(FILE_SCOPE_KEY).close()

    async def _stream(self, file: IO[bytes], length: int | None, send: AsgiApp) -> None:
        """The file's bytes, no more than the Content-Length announced (a log may still grow)."""
        left = length if length is not None else -1
        with file:
            while left:
                chunk = await asyncio.to_thread(file.read, CHUNK_BYTES if left < 0 else min(left, CHUNK_BYTES))
                if not chunk:
                    return
                left -= len(chunk) if left > 0 else 0
                await self._send_in_time(send, {"type": "http.response.body", "body": chunk, "more_body": True})

    async def _send_in_time(self, send: AsgiApp, message: Message) -> None:
        try:
            await asyncio.wait_for(send(message), self.write_timeout)
        except TimeoutError:
            raise ClientTooSlow(f"the client took no data for {self.write_timeout:g} s") from None


def content_length(start: Message) -> int | None:
    for name, value in start.get("headers", []):
        if name.lower() == b"content-length":
            return int(value)
    return None


class ClientTooSlow(Exception):
    """Raised into the server, which drops the connection."""


class OneHopWSGIMiddleware(WSGIMiddleware):
    """a2wsgi's WSGI-in-ASGI bridge with fewer crossings between the request thread and the event
    loop: a2wsgi hands each message (the request body's, the response's start, body and end) from
    one to the other and waits for the other side to take it, four round trips per request. Here
    the first part of the request body is read on the loop before the thread starts, and a
    response whose body is already in memory (Django's HttpResponse) is sent from the loop once the
    thread is done. Streaming responses and handed-off files go a2wsgi's way, chunk by chunk."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)
        return await OneHopResponder(self.app, self.executor, self.send_queue_size)(scope, receive, send)


class OneHopResponder(WSGIResponder):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.start_message: Any = None
        self.buffered: list[Any] = []

    async def __call__(self, scope: Any, receive: AsgiApp, send: AsgiApp) -> None:
        body = Body(self.loop, receive)
        first = await receive()
        body.buffer.extend(first.get("body", b""))
        body._has_more = first.get("more_body", False)
        environ = build_environ(scope, body)
        sender = self.loop.create_task(self.sender(send))
        try:
            context = contextvars.copy_context()
            await self.loop.run_in_executor(self.executor, context.run, self.wsgi, environ, self.start_response)
            for message in self.buffered:
                await self.send_queue.put(message)
            await self.send_queue.put(None)
            await sender
            if self.exc_info is not None:
                raise self.exc_info[0].with_traceback(self.exc_info[1], self.exc_info[2])
        finally:
            if not sender.done():
                sender.cancel()

    def start_response(self, status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        self.exc_info = exc_info
        if not self.response_started:
            self.response_started = True
            headers = [
                (name.strip().encode("latin1").lower(), value.strip().encode("latin1"))
                for name, value in response_headers
            ]
            self.start_message = {
                "type": "http.response.start",
                "status": int(status.split(" ", 1)[0]),
                "headers": headers,
            }
        return self.write

    def write(self, chunk: bytes, *, more_body: bool = True) -> None:
        if self.start_message is not None:
            self.send(self.start_message)
            self.start_message = None
        self.send({"type": "http.response.body", "body": chunk, "more_body": more_body})

    def wsgi(self, environ: Any, start_response: Any) -> None:
        iterable = self.app(environ, start_response)
        try:
            if getattr(iterable, "streaming", True) is False and self.start_message is not None:
                body = b"".join(iterable)  # Django's HttpResponse: one chunk, already in memory
                self.buffered = [self.start_message, {"type": "http.response.body", "body": body}]
                self.start_message = None
                return
            for chunk in iterable:
                self.write(chunk)
            self.write(b"", more_body=False)
        finally:
            getattr(iterable, "close", lambda: None)()
