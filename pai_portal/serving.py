"""HTTP serving that a slow or stalled client cannot hold: an ASGI layer between the server and
the request threads that run Django's WSGI handler (a2wsgi).

- Files (task logs, static files: Django's FileResponse) are not streamed by a request thread.
  The WSGI side hands the open file over through `wsgi.file_wrapper` and returns at once; this
  layer then streams it on the event loop, where a client that does not read costs a coroutine
  and the server's bounded send buffer, not a thread.
- Other streamed answers (StreamingHttpResponse: a masked log download, a CSV export) are not
  streamed by a request thread either. The thread returns the iterator; the event loop then has
  a piece thread (a pool as big as the request threads' own) make the next PIECE_BYTES of it only
  once the client has taken the last piece, so a thread is held while a piece is made, never
  while a client reads. Such an iterator is resumed on whichever piece thread is free: it must
  hold no database cursor between pieces (web/csv_export.in_pages).
- Write timeout: a body chunk the client has not taken within PAI_HTTP_WRITE_TIMEOUT seconds
  ends the response (the server closes the connection).
- Request bodies are read whole on the event loop (BodyReader) before a request thread is taken:
  a body that trickles in costs a coroutine and its bytes (spooled to a temporary file past
  SPOOL_BYTES), never a thread. Each piece must come within PAI_HTTP_READ_TIMEOUT seconds and the
  whole body within PAI_HTTP_BODY_TIMEOUT (one more such period per PAI_MAX_BODY_BYTES of a big
  upload), else 408; a body over its limit (pai_portal.body_limits) is not read further and
  Django answers 413; a client address with PAI_HTTP_BODIES_PER_CLIENT bodies still arriving in
  this process gets 429 for the next one. Request headers are timed by the server itself
  (granian's header read timeout, see `manage.py serve`).
"""

from __future__ import annotations

import asyncio
import contextvars
import io
import json
import math
import os
import signal
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any
from wsgiref.util import FileWrapper

from a2wsgi.wsgi import Body, WSGIMiddleware, WSGIResponder, build_environ

import catalogue
from pai_portal.body_limits import TOO_LARGE_ENVIRON_KEY, is_api
from web.api.answers import answer

FILE_SCOPE_KEY = "pai.file_to_stream"
CHUNK_BYTES = 256 * 1024
PIECE_BYTES = 256 * 1024  # of a streamed answer, made by a piece thread at a time
SPOOL_BYTES = 1024 * 1024  # bodies bigger than this wait for their request thread in a temporary file
DRAIN_BYTES = 16 * 1024 * 1024  # of a body over its limit, read and dropped so that the 413 is heard
Message = dict[str, Any]
AsgiApp = Callable[..., Any]


MASTER_PID_VARIABLE = "PAI_SERVE_MASTER_PID"  # set by `manage.py serve` for its workers
MASTER_WATCH_S = 0.5
MASTER_GONE_GRACE_S = 5  # for requests in flight, then the worker exits whatever it is doing


def exit_with_master() -> None:
    """In a `manage.py serve` worker: end this process once its master is gone (kill -9 leaves the
    workers serving otherwise, and a restarted `serve` would listen beside them). A daemon thread
    watches for this process being handed to another parent."""
    master = os.environ.get(MASTER_PID_VARIABLE)
    if not master:
        return

    def watch() -> None:
        while os.getppid() == int(master):  # not the parent at import: the master may be gone by then
            time.sleep(MASTER_WATCH_S)
        # The kernel ends the process after the grace (SIGALRM's default action), even when the
        # interpreter's shutdown hangs on a request thread and this daemon thread is frozen.
        signal.alarm(MASTER_GONE_GRACE_S)
        os.kill(os.getpid(), signal.SIGTERM)  # granian's own shutdown: in-flight requests finish

    threading.Thread(target=watch, name="exit-with-master", daemon=True).start()


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


@dataclass
class BodyPolicy:
    """How request bodies are read on the event loop (see the module's docstring)."""

    limit: Callable[[str], int]  # the path's body limit in bytes
    total_timeout: float  # seconds for a body of up to `limit_unit` bytes
    limit_unit: int  # bytes a big upload may take per `total_timeout`
    per_client: int  # bodies still arriving from one client address at once
    arriving: Counter[str] = field(default_factory=Counter)

    def deadline(self, length: int) -> float:
        return self.total_timeout * max(1, math.ceil(length / self.limit_unit))


class BodyRefused(Exception):
    """The request is answered from the loop without running the app; str() in English."""

    def __init__(self, status: int, message: catalogue.Message, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        super().__init__(message.text)
        self.status, self.message = status, message
        self.headers = headers


class OneHopWSGIMiddleware(WSGIMiddleware):
    """a2wsgi's WSGI-in-ASGI bridge with fewer crossings between the request thread and the event
    loop: a2wsgi hands each message (the request body's, the response's start, body and end) from
    one to the other and waits for the other side to take it, four round trips per request. Here
    the whole request body is read on the loop before the thread starts (BodyPolicy), and a
    response whose body is already in memory (Django's HttpResponse) is sent from the loop once the
    thread is done. A streamed answer is made piece by piece on piece threads as the client takes
    it (stream_off_thread); a handed-off file is streamed by TimeoutsAndFileStreaming."""

    def __init__(self, app: Any, workers: int = 10, *, body: BodyPolicy | None = None, **kwargs: Any) -> None:
        super().__init__(app, workers, **kwargs)
        self.body = body or BodyPolicy(limit=lambda path: 2**62, total_timeout=3600, limit_unit=2**62, per_client=2**31)
        # Pieces of streamed answers: as many threads again, so that no request queues behind them
        # (512 downloads starting at once kept /login/ waiting 5.4 s at p99 on one pool, 2.2 s on two).
        self.piece_executor = ThreadPoolExecutor(thread_name_prefix="WSGI-pieces", max_workers=workers)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)
        responder = OneHopResponder(self.app, self.executor, self.send_queue_size, self.piece_executor)
        return await responder.respond(scope, receive, send, self.body)


class OneHopResponder(WSGIResponder):
    def __init__(
        self, app: Any, executor: ThreadPoolExecutor, send_queue_size: int, pieces: ThreadPoolExecutor
    ) -> None:
        super().__init__(app, executor, send_queue_size)
        self.piece_executor = pieces
        self.start_message: Any = None
        self.buffered: list[Any] = []
        self.stream: Iterable[bytes] | None = None  # a streamed answer, handed to the loop

    async def respond(self, scope: Any, receive: AsgiApp, send: AsgiApp, policy: BodyPolicy) -> None:
        try:
            body, too_large = await read_body(scope, receive, policy)
        except BodyRefused as refused:
            return await answer_refusal(scope, send, refused)
        with body:
            environ: dict[str, Any] = dict(build_environ(scope, Body(self.loop, receive)))
            environ["wsgi.input"] = body
            environ["CONTENT_LENGTH"] = str(too_large or body_length(body))
            if too_large:
                environ[TOO_LARGE_ENVIRON_KEY] = True
            await self.run(environ, send)

    async def run(self, environ: dict[str, Any], send: AsgiApp) -> None:
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
            if self.stream is not None:
                await self.stream_off_thread(self.stream, context, send)
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
        if not isinstance(iterable, FileHandOff) and getattr(iterable, "streaming", True) is not False:
            self.stream = iterable  # made piece by piece later (stream_off_thread), closed there
            return
        try:
            if isinstance(iterable, FileHandOff):  # the file itself follows (TimeoutsAndFileStreaming)
                self.write(b"", more_body=False)
                return
            body = b"".join(iterable)  # Django's HttpResponse: one chunk, already in memory
            if self.start_message is None:  # (start_response called while iterating)
                self.write(body, more_body=False)
                return
            self.buffered = [self.start_message, {"type": "http.response.body", "body": body}]
            self.start_message = None
        finally:
            getattr(iterable, "close", lambda: None)()

    async def stream_off_thread(self, stream: Iterable[bytes], context: contextvars.Context, send: AsgiApp) -> None:
        """The streamed answer, each PIECE_BYTES of it made on a piece thread once the client
        took the last one, and sent from the loop (the write timeout and the server's bounded
        buffer apply). Pieces and the final close run one at a time, in the request's context
        (its language, its locals)."""
        chunks: Iterator[bytes] | None = None
        lock = threading.Lock()

        def one_at_a_time(function: Callable[..., Any], *args: Any) -> Any:
            with lock:
                return context.run(function, *args)

        def next_piece() -> tuple[bytes, bool]:
            nonlocal chunks
            if chunks is None:
                chunks = iter(stream)
            return take_piece(chunks)

        try:
            ended = False
            while not ended:
                piece, ended = await self.loop.run_in_executor(self.piece_executor, one_at_a_time, next_piece)
                if self.start_message is not None:
                    await send(self.start_message)
                    self.start_message = None
                if piece:
                    await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            # Django's close() sends request_finished (database connections tidied) on a request
            # thread, after any piece still being made for a client that went away.
            close = getattr(stream, "close", None)
            if close is not None:
                closing = self.loop.run_in_executor(self.piece_executor, one_at_a_time, close)
                closing.add_done_callback(lambda done: done.cancelled() or done.exception())


def take_piece(chunks: Iterator[bytes]) -> tuple[bytes, bool]:
    """The next PIECE_BYTES or so of a streamed answer (more when one chunk is bigger), and
    whether the stream ended."""
    piece: list[bytes] = []
    size = 0
    for chunk in chunks:
        piece.append(chunk)
        size += len(chunk)
        if size >= PIECE_BYTES:
            return b"".join(piece), False
    return b"".join(piece), True


def declared_length(scope: dict[str, Any]) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return max(0, int(value))
            except ValueError:
                return None
    return None


def body_length(body: IO[bytes]) -> int:
    body.seek(0, os.SEEK_END)
    length = body.tell()
    body.seek(0)
    return length


async def read_body(scope: dict[str, Any], receive: AsgiApp, policy: BodyPolicy) -> tuple[IO[bytes], int]:
    """(the whole body, seeked to its start; 0 or the length that passed the path's limit).

    A body over its limit is not kept: the app gets it empty, marked too large, and answers 413.
    Up to DRAIN_BYTES past the limit it is read and dropped first, so that a client still sending
    gets that answer rather than a reset connection."""
    limit = policy.limit(scope["path"])
    declared = declared_length(scope)
    if declared is not None and declared > limit:
        if declared <= limit + DRAIN_BYTES:
            await drain(receive, 0, limit + DRAIN_BYTES, policy.total_timeout)
        return io.BytesIO(), declared
    deadline_s = policy.deadline(declared or 0)
    body: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - closed by the caller
    client = (scope.get("client") or ("?", 0))[0]
    counted = False
    try:
        async with asyncio.timeout(deadline_s):
            while True:
                message = await receive()
                if message["type"] != "http.request":  # disconnected, or a piece came too late
                    raise BodyRefused(408, catalogue.Message.of("api.body.late"))
                piece = message.get("body", b"")
                if body.tell() + len(piece) > limit:
                    seen = body.tell() + len(piece)
                    body.close()
                    if message.get("more_body", False):
                        await drain(receive, seen, limit + DRAIN_BYTES, policy.total_timeout)
                    return io.BytesIO(), seen
                body.write(piece)
                if not message.get("more_body", False):
                    body.seek(0)
                    return body, 0
                if not counted:  # the body trickles: one more of this address's bodies arriving
                    if policy.arriving[client] >= policy.per_client:
                        refusal = catalogue.Message.of("api.body.arriving", most=policy.per_client)
                        raise BodyRefused(429, refusal, ((b"retry-after", b"5"),))
                    policy.arriving[client] += 1
                    counted = True
    except TimeoutError:
        body.close()
        raise BodyRefused(408, catalogue.Message.of("api.body.deadline", seconds=f"{deadline_s:g}")) from None
    except BaseException:
        body.close()
        raise
    finally:
        if counted:
            policy.arriving[client] -= 1
            if not policy.arriving[client]:
                del policy.arriving[client]


async def drain(receive: AsgiApp, seen: int, cap: int, timeout_s: float) -> None:
    """Read and drop the rest of a body, while no more than `cap` bytes in all and `timeout_s`."""
    try:
        async with asyncio.timeout(timeout_s):
            while seen <= cap:
                message = await receive()
                seen += len(message.get("body", b""))
                if message["type"] != "http.request" or not message.get("more_body", False):
                    return
    except TimeoutError:
        return


async def answer_refusal(scope: dict[str, Any], send: AsgiApp, refused: BodyRefused) -> None:
    """A short answer from the loop: the API's error answer for the API, the English as text otherwise."""
    if is_api(scope["path"]):
        code = "TooManyRequestsError" if refused.status == 429 else "RequestTimeoutError"
        body = answer(refused.status, code, refused.message).body()
        payload, kind = json.dumps(body).encode(), b"application/json"
    else:
        payload, kind = str(refused).encode(), b"text/plain; charset=utf-8"
    headers = [(b"content-type", kind), (b"content-length", str(len(payload)).encode()), (b"connection", b"close")]
    try:
        await send(
            {"type": "http.response.start", "status": refused.status, "headers": headers + list(refused.headers)}
        )
        await send({"type": "http.response.body", "body": payload})
    except (OSError, RuntimeError, ClientTooSlow):
        pass  # the client is gone
