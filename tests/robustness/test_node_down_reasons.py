"""Why a node is down, in plain words (clusters.executors.plain_errors): the Docker client's real
errors against real sockets (nothing listening, a listener that never answers, no socket file, a
name that does not resolve) -- no raw Python exception reprs on the pages."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import requests

from catalogue import Message, joined
from clusters.executors import docker as docker_executor
from clusters.executors.base import ExecutorError
from clusters.executors.docker import DockerExecutor
from clusters.executors.plain_errors import engine_silent, plain_cause

RAW = ("object at 0x", "HTTPConnectionPool", "Max retries", "Caused by", "Errno", "NewConnectionError")


def ping_failure(url: str) -> ExecutorError:
    with pytest.raises(ExecutorError) as failed:
        DockerExecutor(docker_url=url).ping()
    return failed.value


def ping_error(url: str) -> str:
    return str(ping_failure(url))


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
    url = f"tcp://127.0.0.1:{closed_port}"
    failure = ping_failure(url)
    assert str(failure) == f"the Docker engine at {url} does not answer (connection refused: nothing listens there)"
    assert failure.messages == [Message.of("node.docker_silent", url=url, cause=Message.of("node.cause.refused"))]


def test_it_says_how_long_it_waited_for_an_engine_that_never_answers(silent_listener, monkeypatch):
    monkeypatch.setattr(docker_executor, "PING_TIMEOUT_S", 0.05)
    said = ping_error(f"tcp://127.0.0.1:{silent_listener}")
    assert said == f"the Docker engine at tcp://127.0.0.1:{silent_listener} does not answer (timed out after 0.05 s)"


def test_it_says_there_is_no_socket_for_a_missing_unix_socket(tmp_path):
    failure = ping_failure(f"unix://{tmp_path}/docker.sock")
    said = str(failure)
    assert said.endswith("does not answer (no socket at that path)") and not any(raw in said for raw in RAW)
    assert failure.messages[0].params["cause"] == Message.of("node.cause.no_socket")


def test_it_says_a_host_name_does_not_resolve():
    failure = ping_failure("tcp://no-such-node.invalid:2375")
    assert str(failure).endswith("does not answer (its host name does not resolve)"), failure
    assert failure.messages[0].params["cause"] == Message.of("node.cause.no_host_name")


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
    assert str(plain_cause(error, timeout_s=5)) == words


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (requests.exceptions.ReadTimeout("Read timed out. (read timeout=5)"),
         Message.of("node.cause.timed_out_after", seconds=5)),
        (requests.exceptions.HTTPError("404 Client Error for http://x:1/version: Not Found"),
         Message.of("node.cause.http_saying", code="404", words="Not Found")),
        (requests.exceptions.HTTPError("500 Server Error"), Message.of("node.cause.http", code="500")),
        (ConnectionResetError("Connection reset by peer"), Message.of("node.cause.closed")),
        (OSError("[Errno 113] No route to host"), Message.of("node.cause.no_route")),
        (OSError("[Errno 101] Network is unreachable"), Message.of("node.cause.unreachable")),
        (PermissionError("Permission denied"), Message.of("node.cause.permission_denied")),
        (TimeoutError(), Message.of("node.cause.timed_out")),
    ],
)  # fmt: skip
def test_it_gives_each_cause_it_knows_its_code(error, cause):
    timeout_s = 5 if cause.code == "node.cause.timed_out_after" else None
    assert plain_cause(error, timeout_s) == cause


def test_an_engine_on_the_local_socket_is_named_so():
    said = engine_silent(None, ConnectionRefusedError("Connection refused"), 5)
    assert said == Message.of("node.docker_socket_silent", cause=Message.of("node.cause.refused"))
    assert (
        said.text == "the Docker engine at the local socket does not answer (connection refused: nothing listens there)"
    )


def test_a_node_down_reason_is_shown_in_chinese(closed_port):
    from django.utils import translation

    from web.reasons import reason_text

    silent = ping_failure(f"tcp://127.0.0.1:{closed_port}").messages
    reason = [Message.of("reason.node_down", node="b", why=[Message.of("node.silent_for", seconds=12, error=silent)])]
    assert joined(reason) == (
        f"node b is down (did not answer for 12 s: the Docker engine at tcp://127.0.0.1:{closed_port} does not answer "
        "(connection refused: nothing listens there))"
    )
    with translation.override("zh-hans"):
        shown = reason_text(reason)
    assert "节点 b 已宕机" in shown and "12 秒未应答" in shown, shown
    assert f"位于 tcp://127.0.0.1:{closed_port} 的 Docker 引擎没有应答" in shown and "连接被拒绝" in shown, shown
