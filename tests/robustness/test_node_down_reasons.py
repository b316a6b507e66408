"""Why a node is down, in plain words (clusters.executors.plain_errors): the Docker client's real
errors against real sockets (nothing listening, a listener that never answers, no socket file, a
name that does not resolve) -- no raw Python exception reprs on the pages."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import requests

from clusters.executors import docker as docker_executor
from clusters.executors.base import ExecutorError
from clusters.executors.docker import DockerExecutor
from clusters.executors.plain_errors import plain_error

RAW = ("object at 0x", "HTTPConnectionPool", "Max retries", "Caused by", "Errno", "NewConnectionError")


def ping_error(url: str) -> str:
    with pytest.raises(ExecutorError) as failed:
        DockerExecutor(docker_url=url).ping()
    return str(failed.value)


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """Accepts connections (the kernel's backlog) and never answers: a hung engine."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def test_it_says_connection_refused_for_an_engine_nobody_listens_for(closed_port):
    said = ping_error(f"tcp://127.0.0.1:{closed_port}")
    url = f"tcp://127.0.0.1:{closed_port}"
    assert said == f"the Docker engine at {url} does not answer (connection refused: nothing listens there)"


def test_it_says_how_long_it_waited_for_an_engine_that_never_answers(silent_listener, monkeypatch):
    monkeypatch.setattr(docker_executor, "PING_TIMEOUT_S", 0.3)
    said = ping_error(f"tcp://127.0.0.1:{silent_listener}")
    assert said == f"the Docker engine at tcp://127.0.0.1:{silent_listener} does not answer (timed out after 0.3 s)"


def test_it_says_there_is_no_socket_for_a_missing_unix_socket(tmp_path):
    said = ping_error(f"unix://{tmp_path}/docker.sock")
    assert said.endswith("does not answer (no socket at that path)") and not any(raw in said for raw in RAW)


def test_it_says_a_host_name_does_not_resolve():
    said = ping_error("tcp://no-such-node.invalid:2375")
    assert said.endswith("does not answer (its host name does not resolve)"), said


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (requests.exceptions.ReadTimeout("HTTPConnectionPool(host='x', port=1): Read timed out. (read timeout=5)"),
         "timed out after 5 s"),
        (requests.exceptions.HTTPError("404 Client Error for http://x:1/version: Not Found"),
         "it answered HTTP 404 (Not Found)"),
        (RuntimeError("<urllib3.connection.HTTPConnection object at 0x7f00>: something odd"), "something odd"),
    ],
)  # fmt: skip
def test_it_words_the_errors_it_knows_and_strips_object_reprs_from_others(error, words):
    assert plain_error(error, timeout_s=5) == words


def test_a_node_down_reason_is_shown_in_chinese():
    from django.utils import translation

    from web.error_text import translate_reason

    reason = (
        "needs 2 GPUs on one node; largest free: 1 on a; node b is down (did not answer for 12 s: the Docker "
        "engine at tcp://10.0.0.2:2375 does not answer (timed out after 5 s))"
    )
    with translation.override("zh-hans"):
        shown = translate_reason(reason)
    assert "节点 b 已宕机" in shown and "12 秒未应答" in shown, shown
    assert "位于 tcp://10.0.0.2:2375 的 Docker 引擎没有应答" in shown and "等待 5 秒后超时" in shown, shown
