"""WsgiHttpBridge: plain HTTP from an ASGI server through a WSGI app, one thread per request."""

import asyncio
import threading

from jobs.api.http_bridge import WsgiHttpBridge, build_environ


def scope(path="/api/v2/info", method="GET", headers=(), query=b""):
    return {
        "type": "http",
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "root_path": "",
        "query_string": query,
        "headers": list(headers),
        "client": ("10.0.0.9", 5555),
        "server": ("127.0.0.1", 8000),
    }


async def call(app, request_scope, chunks=(b"",)):
    incoming = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1} for i, chunk in enumerate(chunks)
    ]
    sent = []

    async def receive():
        return incoming.pop(0)

    async def send(message):
        sent.append(message)

    await app(request_scope, receive, send)
    start = sent[0]
    body = b"".join(message.get("body", b"") for message in sent[1:])
    return start["status"], dict(start["headers"]), body, sent[-1]


def echo_app(environ, start_response):
    body = environ["wsgi.input"].read()
    start_response("201 Created", [("Content-Type", "text/plain"), ("X-Path", environ["PATH_INFO"])])
    return [b"got:", body, b":", environ.get("HTTP_X_TOKEN", "").encode()]


def test_it_builds_a_pep_3333_environ_from_the_scope():
    environ = build_environ(
        scope(
            "/api/v2/jobs/älice~x",
            headers=[(b"content-type", b"text/yaml"), (b"cookie", b"a=1"), (b"cookie", b"b=2")],
            query=b"limit=1",
        ),
        body=None,
    )
    assert environ["PATH_INFO"] == "/api/v2/jobs/älice~x".encode().decode("latin-1")
    assert environ["CONTENT_TYPE"] == "text/yaml"
    assert environ["HTTP_COOKIE"] == "a=1; b=2"
    assert environ["QUERY_STRING"] == "limit=1"
    assert environ["REMOTE_ADDR"] == "10.0.0.9"


def test_it_passes_a_chunked_body_and_streams_the_answer():
    status, headers, body, last = asyncio.run(
        call(WsgiHttpBridge(echo_app), scope(method="POST", headers=[(b"x-token", b"t1")]), chunks=(b"ab", b"cd"))
    )
    assert status == 201
    assert headers[b"x-path"] == b"/api/v2/info"
    assert body == b"got:abcd:t1"
    assert last["more_body"] is False


def test_it_answers_500_when_the_app_raises():
    def broken(environ, start_response):
        raise RuntimeError("boom")

    status, _, _, _ = asyncio.run(call(WsgiHttpBridge(broken), scope()))
    assert status == 500


def test_it_serves_concurrent_requests_on_separate_threads():
    seen = set()
    gate = threading.Barrier(4, timeout=10)

    def slow(environ, start_response):
        gate.wait()  # all four must be inside the app at once
        seen.add(threading.get_ident())
        start_response("200 OK", [])
        return [b"ok"]

    async def many():
        bridge = WsgiHttpBridge(slow, threads=4)
        return await asyncio.gather(*(call(bridge, scope()) for _ in range(4)))

    answers = asyncio.run(many())
    assert [answer[0] for answer in answers] == [200] * 4
    assert len(seen) == 4


def test_it_serves_the_portal_through_djangos_wsgi_handler():
    from django.core.wsgi import get_wsgi_application

    status, _, body, _ = asyncio.run(
        call(WsgiHttpBridge(get_wsgi_application()), scope("/api/v2/info", headers=[(b"host", b"127.0.0.1")]))
    )
    assert status == 200
    assert b'"authnMethod":"basic"' in body
