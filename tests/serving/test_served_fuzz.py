"""The nastiest bodies of the submit fuzz test (tests/robustness/test_submit_fuzz.py), sent to the
served portal over raw sockets: every connection gets an HTTP answer, and none is a 500."""

from __future__ import annotations

import contextlib
import json
import socket
from urllib.parse import quote

import pytest
from django.test import Client

from tests.factories import v2_yaml

# (The same routes' writes are fuzzed in-process on PostgreSQL by tests/api/test_fuzz.py and
# tests/robustness/test_submit_fuzz.py; what this adds is the server's framing: left out there.)
pytestmark = pytest.mark.db_agnostic

CSRF = "c" * 32  # Django takes the unmasked secret as the token when the cookie holds it too


def deep_blocks(depth: int) -> str:
    return "protocolVersion: 2\nname: deep\n" + "".join("  " * level + "a:\n" for level in range(depth))


DEEP_BLOCKS = deep_blocks(2000)
NASTY_API_BODIES = {
    "2,000 nested blocks": ("text/yaml", DEEP_BLOCKS.encode()),
    "100,000 [": ("application/json", b'{"a": ' + b"[" * 100_000),
    "a raw lone surrogate": ("text/yaml", v2_yaml("a\ud800").encode("utf-8", "surrogatepass")),
    "a 30-digit gpu": ("text/yaml", v2_yaml("gpus").replace("gpu: 0", "gpu: " + "9" * 30).encode()),
    "a 5,000-digit retry count": ("text/yaml", v2_yaml("big", extra=f"jobRetryCount: {'9' * 5000}\n").encode()),
    "cpu 1e308": ("text/yaml", v2_yaml("huge").replace("cpu: 1", "cpu: 1e308").encode()),
    "NaN and Infinity tokens": ("application/json", b'{"protocolVersion": 2, "name": NaN, "jobRetryCount": Infinity}'),
    "1.5 MiB of config": ("text/yaml", v2_yaml("fat", extra=f"description: {'x' * 1_500_000}\n").encode()),
    "3 MiB, over the body limit": ("text/yaml", b"x" * 3 * 1024 * 1024),
}


def answer_of(port: int, request: bytes, timeout: float = 40) -> bytes:
    """Everything the server sends back on one connection until it closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as client:
        # Answered (413) before the whole body was sent: the answer is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            client.sendall(request)
        received = b""
        while chunk := client.recv(65536):
            received += chunk
    return received


def http_request(method: str, path: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def status_of(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), f"no HTTP answer: {answer[:100]!r}"
    return int(answer.split(b" ", 2)[1])


@pytest.mark.slow
def test_it_answers_every_nasty_body_on_every_connection_without_a_500(serve, token, user, default_vc):
    portal = serve()
    answers = {
        case: answer_of(
            portal.port,
            http_request(
                "POST", "/api/v2/jobs", {"Authorization": f"Bearer {token}", "Content-Type": content_type}, body
            ),
        )
        for case, (content_type, body) in NASTY_API_BODIES.items()
    }
    statuses = {case: status_of(answer) for case, answer in answers.items()}
    assert all(400 <= status < 500 for status in statuses.values()), statuses
    for case, answer in answers.items():
        if statuses[case] != 413:  # refused before the API: the server's own short answer
            problem = json.loads(answer.split(b"\r\n\r\n", 1)[1])
            assert problem["code"] and problem["message"], case

    session = Client()
    session.force_login(user)
    page_headers = {
        "Cookie": f"sessionid={session.cookies['sessionid'].value}; csrftoken={CSRF}",
        "X-CSRFToken": CSRF,
        "Content-Type": "application/x-www-form-urlencoded",
    }
    page_bodies = {
        "300 nested blocks": b"mode=text&action=submit&config_text=" + quote(deep_blocks(300)).encode(),
        "a raw surrogate in a form field": b"mode=form&action=submit&name=a%ED%A0%80&roles-0-name=w&roles-0-command=x",
        "a hidden config of 100,000 [": b"mode=form&action=export&name=x&base_config=" + b"%5B" * 100_000,
    }
    for case, body in page_bodies.items():
        status = status_of(answer_of(portal.port, http_request("POST", "/submit/", page_headers, body)))
        assert status in (200, 400), (case, status)


def answer_after_half_close(port: int, request: bytes) -> bytes:
    """The answer to a request whose client stops sending (shut its side) before the body ends."""
    with socket.create_connection(("127.0.0.1", port), timeout=40) as client:
        client.sendall(request)
        client.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := client.recv(65536):
            received += chunk
    return received


POST_HEAD = b"POST /api/v2/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
BROKEN_REQUESTS = {
    "a Content-Length of letters": POST_HEAD + b"Content-Length: abc\r\n\r\nname: x",
    "a broken chunk size": POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
    "both Content-Length and chunked": POST_HEAD
    + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "a request line of binary": b"\x00\xff garbage\r\n\r\n",
    "a surrogate's bytes in the path": b"POST /api/v2/jobs/a%ED%A0%80 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "a surrogate's bytes in a header": POST_HEAD + b"Content-Type: \xed\xa0\x80\r\nContent-Length: 7\r\n\r\nname: x",
    # (not HTTP: a request line of raw non-ASCII bytes is refused by the server before the app)
    "a surrogate's raw bytes in the path": b"GET /api/v2/jobs/a\xed\xa0\x80 HTTP/1.1\r\nHost: x\r\n\r\n",
}


@pytest.mark.slow
def test_it_answers_every_broken_request_with_a_4xx(serve):
    portal = serve()
    statuses = {case: status_of(answer_of(portal.port, request)) for case, request in BROKEN_REQUESTS.items()}
    half_closed = answer_after_half_close(portal.port, POST_HEAD + b"Content-Length: 100\r\n\r\nname: x")
    statuses["a body cut short"] = status_of(half_closed)
    assert all(400 <= status < 500 for status in statuses.values()), statuses


API_POST = b"POST /api/v2/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
API_END = b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
API_BROKEN = {
    "a host not allowed": b"GET /api/v2/info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "a surrogate's bytes in the path": b"GET /api/v2/jobs/a%ED%A0%80" + API_END,
    "a surrogate's bytes in a query": b"GET /api/v2/jobs?username=a%ED%A0%80" + API_END,
    "a surrogate's bytes in a header": API_POST + b"Content-Type: \xed\xa0\x80\r\nContent-Length: 7\r\n\r\nname: x",
    "a surrogate's bytes in the token": b"GET /api/v2/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    b"Authorization: Bearer \xed\xa0\x80\r\n\r\n",
    "a surrogate's bytes in the host": b"GET /api/v2/info HTTP/1.1\r\nHost: \xed\xa0\x80\r\nConnection: close\r\n\r\n",
}


@pytest.mark.slow
def test_it_answers_a_surrogates_bytes_in_an_api_request_with_json_naming_what(serve):
    """Django's own 400s (a host not allowed, one it cannot read) are the API's `{code, message}`
    under /api/ (they were Django's HTML page), as every other refusal there."""
    portal = serve()
    answers = {case: answer_of(portal.port, request) for case, request in API_BROKEN.items()}
    wrong = {}
    for case, answer in answers.items():
        body = answer.partition(b"\r\n\r\n")[2]
        try:
            said = json.loads(body)
        except ValueError:
            said = None
        if not (400 <= status_of(answer) < 500 and isinstance(said, dict) and said.get("code") and said.get("message")):
            wrong[case] = (status_of(answer), body[:120])
    assert wrong == {}
