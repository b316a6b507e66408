"""Bad input that only the served stack sees (multipart bodies, websocket paths) gets a 4xx."""

from __future__ import annotations

import asyncio
import http.client
import json

import pytest
import websockets
from websockets.typing import Origin

# (Bodies and websocket paths the server's stack refuses before a view writes a row: no database
# difference; CI's PostgreSQL run leaves it out.)
pytestmark = pytest.mark.db_agnostic

MULTIPART = b'--xyz\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--xyz--\r\n'


@pytest.mark.slow
@pytest.mark.parametrize("route", ["/api/v2/jobs", "/api/v1/jobs", "/api/v2/tokens/application"])
def test_it_answers_a_multipart_body_to_the_api_with_code_and_message(serve, token, default_vc, route):
    portal = serve()
    connection = http.client.HTTPConnection("127.0.0.1", portal.port, timeout=10)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "multipart/form-data; boundary=xyz"}
    connection.request("POST", route, body=MULTIPART, headers=headers)
    response = connection.getresponse()
    answer = json.loads(response.read())
    assert 400 <= response.status < 500
    assert answer["code"] and answer["message"]


def websocket_status(port: int, path: str) -> int:
    """The HTTP status the server answers a websocket handshake on `path` with."""

    async def connect() -> int:
        try:
            async with websockets.connect(f"ws://127.0.0.1:{port}{path}", origin=Origin(f"http://127.0.0.1:{port}")):
                return 101
        except websockets.InvalidStatus as refused:
            return refused.response.status_code

    return asyncio.run(connect())


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/ws/jobs/alice%2Fx~job/terminal/worker/0/", "/ws/no-such-route/"])
def test_it_refuses_a_websocket_on_an_unknown_path_with_a_4xx(serve, path):
    portal = serve()
    assert 400 <= websocket_status(portal.port, path) < 500


@pytest.mark.slow
def test_it_answers_a_v2_config_nested_2000_blocks_deep_with_a_4xx(serve, token, default_vc):
    portal = serve()
    text = (
        "protocolVersion: 2\nname: deep\n"
        + "".join("  " * depth + "a:\n" for depth in range(2000))
        + "  " * 2000
        + "b: 1\n"
    )
    connection = http.client.HTTPConnection("127.0.0.1", portal.port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "text/yaml"}
    connection.request("POST", "/api/v2/jobs", body=text.encode(), headers=headers)
    response = connection.getresponse()
    answer = json.loads(response.read())
    assert 400 <= response.status < 500
    assert answer["code"] and answer["message"]
