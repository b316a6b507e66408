"""Running containers' logs are followed on the process's one stream loop: a connection each, no
thread each; a stream lost while its container runs is opened again from its last line, no line
written twice or lost."""

import threading
import time

import pytest

from clusters.executors.docker import DockerExecutor
from tests.docker.conftest import docker_cli, remove_namespace
from tests.docker.engine_proxy import EngineProxy

pytestmark = [pytest.mark.docker, pytest.mark.django_db]

CONTAINERS = 6


def wait_until(done, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def shows(log_path, text: str) -> bool:
    return log_path.exists() and text in log_path.read_text()


def test_it_follows_running_containers_logs_without_a_thread_each(executor, launch_for):
    tasks = [("worker", index) for index in range(CONTAINERS)]
    ips = executor.prepare_job(launch_for().job_id, "alice~test-job", tasks, "127.0.0.1")
    executor.start(launch_for("worker", 0, "echo started-0; sleep 60", ip=ips[("worker", 0)]))
    wait_until(lambda: shows(launch_for("worker", 0).log_path, "started-0"), "the first log never showed")
    threads = threading.active_count()  # (the stream loop's thread runs from the first follow on)
    for index in range(1, CONTAINERS):
        executor.start(launch_for("worker", index, f"echo started-{index}; sleep 60", ip=ips[("worker", index)]))
    for index in range(CONTAINERS):
        wait_until(lambda i=index: shows(launch_for("worker", i).log_path, f"started-{i}"), f"log {index} never showed")
    assert executor.logs.following() == CONTAINERS
    assert threading.active_count() <= threads  # not one more for five more containers


# The task prints a line each time the test lets it (a file it waits for, made by `docker exec`).
STEPS = (
    "echo line-1; while [ ! -f /tmp/go ]; do sleep 0.1; done; echo line-2;"
    " while [ ! -f /tmp/go2 ]; do sleep 0.1; done; echo line-3 >&2"
)


def test_it_opens_a_lost_log_stream_again_with_no_line_twice_or_lost(docker_engine, namespace, launch_for, tmp_path):
    proxy = EngineProxy(tmp_path / "engine.sock", streams=b"/logs?")
    executor = DockerExecutor(f"unix://{proxy.path}", namespace=namespace)
    log_path = launch_for().log_path
    try:
        ips = executor.prepare_job(launch_for().job_id, "alice~test-job", [("worker", 0)], "127.0.0.1")
        handle = executor.start(launch_for("worker", 0, STEPS, ip=ips[("worker", 0)]))
        wait_until(lambda: shows(log_path, "line-1"), "the log never showed line-1")
        proxy.break_streams()
        docker_cli("exec", handle.executor_id, "touch", "/tmp/go")  # line-2 comes while no stream is open
        time.sleep(0.5)
        proxy.mend()
        wait_until(lambda: shows(log_path, "line-2"), "the stream was not opened again")
        docker_cli("exec", handle.executor_id, "touch", "/tmp/go2")
        wait_until(lambda: not executor.poll(handle).running, "the task never ended")
    finally:
        remove_namespace(executor.api, namespace)
        proxy.close()
    assert proxy.opened >= 2
    assert log_path.read_text() == "line-1\nline-2\nline-3\n"
    assert log_path.with_suffix(".stderr.log").read_text() == "line-3\n"
