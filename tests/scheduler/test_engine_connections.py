"""A Docker node's executor holds a few connections to its engine, however many containers and
jobs it asked about and however often it pinged: at 500 nodes each connection kept is 500 sockets
on each side. The engine is bench/fake_docker.py's (a real server on a unix socket, its own
process, counting the connections open to it); the client is the executor's real docker-py one."""

from __future__ import annotations

import pytest

from clusters.executors.base import TaskHandle
from clusters.executors.docker import DockerExecutor
from tests.scheduler.fake_engine import CONTAINERS, FakeEngine


@pytest.fixture
def engine(engine_with) -> FakeEngine:
    return engine_with()


def test_it_keeps_one_connection_to_an_engine_for_calls_about_many_containers_and_jobs(engine):
    executor = DockerExecutor(engine.url)
    for container in engine.containers:
        assert executor.poll(TaskHandle(executor_id=container)).running
    for job_id in range(CONTAINERS):
        executor.cleanup_job(job_id)  # (a listing of the job's containers, its network removed by name)
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
