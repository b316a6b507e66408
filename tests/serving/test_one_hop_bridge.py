"""The WSGI-in-ASGI bridge (pai_portal.serving.OneHopWSGIMiddleware): a response already in memory
goes out from the event loop in one piece; a streamed one is made piece by piece on piece threads
as the client takes it, so a client that reads nothing holds no thread; a request body arrives whole
however the server splits it."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from pai_portal.serving import PIECE_BYTES, OneHopWSGIMiddleware


class InMemory(list):
    streaming = False  # as Django's HttpResponse


def serve_once(app: Any, body_parts: tuple[bytes, ...] = (b"",), method: str = "GET") -> list[dict[str, Any]]:
    incoming = [
        {"type": "http.request", "body": part, "more_body": number < len(body_parts) - 1}
        for number, part in enumerate(body_parts)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": method,
        "path": "/",
        "root_path": "",
        "scheme": "http",
        "query_string": b"",
        "headers": [],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
    }
    asyncio.run(OneHopWSGIMiddleware(app, workers=1)(scope, receive, send))
    return sent


def test_it_sends_an_in_memory_response_in_one_piece():
    def app(environ, start_response):
        start_response("201 Created", [("Content-Type", "text/plain")])
        return InMemory([b"all ", b"at once"])

    assert serve_once(app) == [
        {"type": "http.response.start", "status": 201, "headers": [(b"content-type", b"text/plain")]},
        {"type": "http.response.body", "body": b"all at once"},
    ]


def test_it_streams_an_app_that_starts_its_answer_only_once_iterated():
    def app(environ, start_response):
        start_response("200 OK", [])
        yield b"one"
        yield b"two"

    start, *bodies = serve_once(app)
    assert start == {"type": "http.response.start", "status": 200, "headers": []}
    assert [(message["body"], message["more_body"]) for message in bodies] == [(b"onetwo", True), (b"", False)]


def test_it_gives_the_app_a_request_body_split_over_several_messages_whole():
    def app(environ, start_response):
        start_response("200 OK", [])
        return InMemory([environ["wsgi.input"].read()])

    assert serve_once(app, (b"abc", b"def", b"ghi"), method="POST")[1]["body"] == b"abcdefghi"


def scope_for(path: str = "/") -> dict[str, Any]:
    return {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "path": path,
        "root_path": "",
        "scheme": "http",
        "query_string": b"",
        "headers": [],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
    }


async def no_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


class Stream:
    """A streamed answer (as Django's StreamingHttpResponse): many chunks, closed once."""

    def __init__(self, chunks: int, size: int = 1024) -> None:
        self.chunks, self.size = chunks, size
        self.closed = 0
        self.threads: set[str] = set()

    def __iter__(self):
        import threading

        for _ in range(self.chunks):
            self.threads.add(threading.current_thread().name)
            yield b"x" * self.size

    def close(self) -> None:
        self.closed += 1

    def closed_once(self, within_s: float = 5.0) -> bool:
        """Whether close() ran exactly once: it runs on a piece thread after the answer went out,
        so a loaded machine may run it a moment after the bridge returns."""
        import time

        deadline = time.monotonic() + within_s
        while not self.closed and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)  # (a second close would come at once)
        return self.closed == 1


def test_it_answers_another_request_while_a_client_takes_nothing_of_a_streamed_answer():
    stream = Stream(chunks=1000)

    def app(environ, start_response):
        start_response("200 OK", [])
        return stream if environ["PATH_INFO"] == "/stream" else InMemory([b"answered"])

    async def main() -> bytes:
        bridge = OneHopWSGIMiddleware(app, workers=1)
        stalled = asyncio.Event()

        async def never_taken(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                stalled.set()
                await asyncio.Event().wait()  # a client that reads nothing more

        reader = asyncio.ensure_future(bridge(scope_for("/stream"), no_body, never_taken))
        await asyncio.wait_for(stalled.wait(), 5)
        sent: list[dict[str, Any]] = []

        async def keep(message: dict[str, Any]) -> None:
            sent.append(message)

        await asyncio.wait_for(bridge(scope_for("/other"), no_body, keep), 5)  # the one thread is free
        reader.cancel()
        return sent[-1]["body"]

    assert asyncio.run(main()) == b"answered"


def test_it_streams_a_streamed_answer_in_pieces_of_at_most_piece_bytes_and_closes_it_once():
    stream = Stream(chunks=100, size=64 * 1024)

    def app(environ, start_response):
        start_response("200 OK", [])
        return stream

    bodies = [message["body"] for message in serve_once(app)[1:]]
    assert b"".join(bodies) == b"x" * (100 * 64 * 1024)
    assert max(len(body) for body in bodies) <= PIECE_BYTES
    assert len(bodies) < 100  # not a message per chunk
    assert stream.closed_once()


def test_it_closes_a_streamed_answer_once_when_the_client_goes_away():
    stream = Stream(chunks=1000)

    def app(environ, start_response):
        start_response("200 OK", [])
        return stream

    async def gone(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            raise OSError("the client went away")

    async def main() -> None:
        bridge = OneHopWSGIMiddleware(app, workers=1)
        with pytest.raises(OSError):
            await bridge(scope_for(), no_body, gone)

    asyncio.run(main())
    assert stream.closed_once()


LANGUAGE: contextvars.ContextVar[str] = contextvars.ContextVar("language", default="en")


def test_it_makes_each_piece_in_the_requests_context():
    """(Django's active language lives in a context variable: a CSV's headings and reasons.)"""

    def app(environ, start_response):
        LANGUAGE.set("zh-hans")  # as LocaleMiddleware does on the request thread
        start_response("200 OK", [])

        def chunks():
            for _ in range(3):
                yield LANGUAGE.get().encode() + b" " * PIECE_BYTES

        return chunks()

    pieces = [message["body"] for message in serve_once(app)[1:] if message["body"]]
    assert [piece.split()[0] for piece in pieces] == [b"zh-hans"] * 3
