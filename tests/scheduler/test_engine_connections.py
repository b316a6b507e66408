"""A Docker node's executor holds a few connections to its engine, however many containers and
jobs it asked about and however often it pinged: at 500 nodes each connection kept is 500 sockets
on each side. The engine is bench/fake_docker.py's (a real server on a unix socket, its own
process, counting the connections open to it); the client is the executor's real docker-py one."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from clusters.executors.base import TaskHandle
from clusters.executors.docker import DockerExecutor

ROOT = Path(__file__).resolve().parents[2]
CONTAINERS = 40  # (more than docker-py's 25 pools: every one of them would have been kept)


class FakeEngine:
    def __init__(self, folder: Path, networks: Sequence[str] = ()) -> None:
        self.folder = folder
        self.containers = [f"{i:064x}" for i in range(CONTAINERS)]
        spec = folder / "engines.json"
        labels = {"pai.portal": "pai"}
        engines = [[[c, f"task-{i}", labels] for i, c in enumerate(self.containers)]]
        named = [[[name, {**labels, "pai.job-id": name.rsplit("-", 1)[1]}] for name in networks]]
        spec.write_text(json.dumps({"engines": engines, "networks": named}))
        fake = ROOT / "bench" / "fake_docker.py"
        self.process = subprocess.Popen([sys.executable, str(fake), str(spec), str(folder)])
        deadline = time.monotonic() + 30
        while not (folder / "ready").exists():
            assert self.process.poll() is None and time.monotonic() < deadline, "the fake engine did not start"
            time.sleep(0.01)
        self.url = f"unix://{folder}/engine-0.sock"

    def ask(self, path: str) -> Any:
        """GET `path` of the fake's control socket: its JSON answer."""
        with socket.socket(socket.AF_UNIX) as control:
            control.connect(str(self.folder / "control.sock"))
            control.sendall(f"GET {path} HTTP/1.1\r\nHost: fake\r\n\r\n".encode())
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += control.recv(65536)
            head, _, body = answer.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(body) < length:
                body += control.recv(65536)
            return json.loads(body)

    def connections(self, expected: int = 1) -> int:
        """Open to the engine (the control socket's own asking left out), looked at until `expected`
        or for 0.5 s: a client's close reaches the server in a moment, a connection kept stays."""
        deadline = time.monotonic() + 0.5
        while (open_now := sum(self.ask("/connections").values()) - 1) != expected and time.monotonic() < deadline:
            time.sleep(0.01)
        return open_now

    def calls(self) -> dict[str, int]:
        return dict(self.ask("/calls"))


@pytest.fixture
def engine_with() -> Iterator[Callable[..., FakeEngine]]:
    """A fake engine's maker (its job networks named), each stopped after the test."""
    made: list[FakeEngine] = []

    def make(networks: Sequence[str] = ()) -> FakeEngine:
        folder = Path(tempfile.mkdtemp(prefix="pai-fake-", dir="/tmp"))  # (a unix socket's path is short)
        made.append(FakeEngine(folder, networks))
        return made[-1]

    yield make
    for fake in made:
        fake.process.kill()
        fake.process.wait()
        shutil.rmtree(fake.folder, ignore_errors=True)


@pytest.fixture
def engine(engine_with) -> FakeEngine:
    return engine_with()


def test_it_keeps_one_connection_to_an_engine_for_calls_about_many_containers_and_jobs(engine):
    executor = DockerExecutor(engine.url)
    for container in engine.containers:
        assert executor.poll(TaskHandle(executor_id=container)).running
    for job_id in range(CONTAINERS):
        executor.cleanup_job(job_id)  # (a listing of the job's containers, one of the networks)
    for container in engine.containers:
        executor.stop(TaskHandle(executor_id=container))
    assert engine.connections() == 1


def test_it_pings_an_engine_on_one_connection_asking_its_api_version_once(engine):
    executor = DockerExecutor(engine.url)
    for _ in range(30):
        executor.ping()
    assert engine.calls() == {"version": 1, "ping": 30}
    assert engine.connections() == 1


def test_it_reads_no_netrc_file_and_no_proxy_settings_per_engine_call(engine, monkeypatch):
    looked: list[str] = []

    def noted(what: str, answer: object) -> object:
        def look(*args: object, **kwargs: object) -> object:
            looked.append(what)
            return answer

        return look

    monkeypatch.setattr("requests.sessions.get_netrc_auth", noted("netrc", None))
    monkeypatch.setattr("requests.sessions.get_environ_proxies", noted("proxies", {}))
    executor = DockerExecutor(engine.url)
    executor.poll(TaskHandle(engine.containers[0], "10.0.0.1"))
    looked.clear()  # (the client's making asked the engine's API version, as docker-py does)
    for container in engine.containers[1:6]:
        executor.poll(TaskHandle(container, "10.0.0.1"))
    assert looked == []


def test_it_sends_a_tcp_engines_calls_through_the_proxy_the_environment_names(monkeypatch):
    from clusters.executors.docker_engine import client

    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "")
    api = client("tcp://10.9.8.7:2375", timeout=1, version="1.41")
    assert api.proxies.get("http") == "http://proxy.example:3128"


def test_it_removes_a_jobs_network_in_one_engine_call(engine_with):
    engine = engine_with(networks=["pai-job-7", "pai-job-8"])
    executor = DockerExecutor(engine.url)
    executor.cleanup_job(7)
    assert engine.calls() == {"version": 1, "list containers": 1, "remove network": 1}
    assert executor.leftover_jobs() == {8}


def test_it_removes_every_network_that_bears_a_jobs_name_where_several_do(engine_with):
    engine = engine_with(networks=["pai-job-7", "pai-job-7"])  # (an older engine let a second be made)
    executor = DockerExecutor(engine.url)
    executor.cleanup_job(7)
    assert executor.leftover_jobs() == set()
