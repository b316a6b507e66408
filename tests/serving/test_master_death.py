"""The `serve` workers end with their master (issue 29, item 7): kill -9 of `manage.py serve`
leaves nothing listening, so a restarted `serve` is the only one on its port."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

# (The server's processes: no database difference; CI's PostgreSQL run leaves it out.)
pytestmark = pytest.mark.db_agnostic


def children_of(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in children.read_text().split()] if children.exists() else []


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:  # no SO_REUSEPORT: fails while anyone still listens there
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


@pytest.mark.slow
def test_it_ends_the_workers_when_the_master_is_killed(serve):
    portal = serve()
    workers = children_of(portal.process.pid)
    assert workers
    os.kill(portal.process.pid, signal.SIGKILL)
    portal.process.wait()
    assert wait_for(lambda: not any(alive(worker) for worker in workers), timeout=10)
    assert wait_for(lambda: port_is_free(portal.port), timeout=5)


@pytest.mark.slow
def test_it_serves_a_restarted_portal_alone_on_its_port(serve):
    first = serve()
    old_workers = children_of(first.process.pid)
    os.kill(first.process.pid, signal.SIGKILL)
    first.process.wait()
    second = serve(port=first.port)  # `serve` waits for the port: the old workers stopped listening
    statuses = [second.get("/api/v2/info")[0] for _ in range(20)]
    assert statuses == [200] * 20
    assert wait_for(lambda: not any(alive(worker) for worker in old_workers), timeout=10)
