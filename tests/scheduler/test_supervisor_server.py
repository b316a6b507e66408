"""The process executor's supervisor server: one per node, forking a supervisor per task."""

import json
import os
import signal
import socket
from pathlib import Path

import pytest

from clusters.executors.process import ProcessExecutor
from clusters.executors.supervise import SERVER_PID_NAME, socket_address
from tests.scheduler.test_process_executor import wait_for, wait_for_exit


@pytest.fixture
def executor(process_work_root):
    """On the worker's work root, whose server the other process-task tests share (a server
    started for each test here cost ~0.1 s of wall each)."""
    return ProcessExecutor(process_work_root)


@pytest.fixture
def own_work_root(tmp_path):
    """A work root of the test's own, for a test that kills its server."""
    return tmp_path / "work"


@pytest.fixture
def own_executor(own_work_root):
    yield ProcessExecutor(own_work_root)
    with_server_gone(own_work_root)


def server_pid(work_root: Path) -> int:
    return int((work_root / SERVER_PID_NAME).read_text())


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def supervisor_pid(work_root: Path, executor_id: str) -> int:
    return int((work_root / executor_id / "pid").read_text().split()[0])


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def with_server_gone(work_root: Path) -> None:
    """Kill the test's server (it would otherwise wait out its idle time)."""
    try:
        pid = server_pid(work_root)
        os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError):
        return
    wait_for(lambda: not alive(pid))


def test_it_forks_every_task_from_one_supervisor_server(executor, make_launch, process_work_root):
    first = executor.start(make_launch("sleep 30", job_id=1))
    second = executor.start(make_launch("sleep 30", job_id=2))
    parents = {parent_of(supervisor_pid(process_work_root, handle.executor_id)) for handle in (first, second)}
    assert parents == {server_pid(process_work_root)}
    executor.stop(first)
    executor.stop(second)


def test_it_starts_a_new_server_when_the_last_one_is_gone(own_executor, make_launch, own_work_root):
    wait_for_exit(own_executor, own_executor.start(make_launch("true", job_id=1)))
    old_server = server_pid(own_work_root)
    with_server_gone(own_work_root)
    status = wait_for_exit(own_executor, own_executor.start(make_launch("exit 4", job_id=2)))
    assert status.exit_code == 4
    assert server_pid(own_work_root) != old_server


def test_it_keeps_a_running_task_when_its_server_is_killed(own_executor, make_launch, own_work_root):
    # The task runs until the test lets it go, after the server is gone (a fixed `sleep 0.5` waited
    # longer than needed, and under load could end before the server's kill).
    launch = make_launch("until [ -e server-gone ]; do sleep 0.01; done; exit 6")
    handle = own_executor.start(launch)
    with_server_gone(own_work_root)
    assert own_executor.poll(handle).running
    (launch.work_dir / "server-gone").touch()
    assert wait_for_exit(own_executor, handle).exit_code == 6


def test_it_does_not_take_a_reused_pid_for_the_tasks_supervisor(executor, make_launch, process_work_root):
    handle = executor.start(make_launch("exit 0"))
    wait_for(lambda: (process_work_root / handle.executor_id / "exit_code").exists())
    task_dir = process_work_root / handle.executor_id
    (task_dir / "exit_code").unlink()
    # A live process with the supervisor's pid but another start time: not the supervisor.
    (task_dir / "pid").write_text(f"{os.getpid()} 1")
    status = executor.poll(handle)
    assert not status.running and status.lost


def test_it_answers_only_once_the_supervisor_has_written_its_pid(executor, make_launch, process_work_root):
    handle = executor.start(make_launch("sleep 30"))
    assert alive(supervisor_pid(process_work_root, handle.executor_id))
    assert executor.poll(handle).running
    executor.stop(handle)


def ask_server(work_root: Path, task_dir: Path) -> bytes:
    """The request the executor sends, sent by hand; returns the server's answer."""
    directory = os.open(work_root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(socket_address(directory))
            connection.sendall(json.dumps({"task_dir": str(task_dir), "env": dict(os.environ)}).encode() + b"\n")
            return connection.recv(64)
    finally:
        os.close(directory)


def test_it_runs_a_task_once_when_asked_twice(executor, make_launch, process_work_root):
    launch = make_launch("echo started")
    handle = executor.start(launch)
    wait_for_exit(executor, handle)
    assert ask_server(process_work_root, process_work_root / handle.executor_id) == b""
    assert launch.log_path.read_text() == "started\n"
