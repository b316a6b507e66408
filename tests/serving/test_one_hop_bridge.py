"""The WSGI-in-ASGI bridge (pai_portal.serving.OneHopWSGIMiddleware): a response already in memory
goes out from the event loop in one piece; streaming responses still go chunk by chunk; a request
body arrives whole however the server splits it."""

from __future__ import annotations

import asyncio
from typing import Any

from pai_portal.serving import OneHopWSGIMiddleware


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


def test_it_streams_a_streaming_response_chunk_by_chunk():
    def app(environ, start_response):
        start_response("200 OK", [])
        yield b"one"
        yield b"two"

    bodies = [(message["body"], message["more_body"]) for message in serve_once(app)[1:]]
    assert bodies == [(b"one", True), (b"two", True), (b"", False)]


def test_it_gives_the_app_a_request_body_split_over_several_messages_whole():
    def app(environ, start_response):
        start_response("200 OK", [])
        return InMemory([environ["wsgi.input"].read()])

    assert serve_once(app, (b"abc", b"def", b"ghi"), method="POST")[1]["body"] == b"abcdefghi"
