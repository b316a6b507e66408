"""A Docker job's tasks know each other's names from their first line: every job-mate's address is
fixed before any task starts, so each container's /etc/hosts names them all (Docker's DNS knows a
container only once it runs, which a loaded engine may do seconds after its job-mates)."""

from __future__ import annotations

import time
from typing import Any

import docker
import pytest

from clusters.executors.base import TaskHandle, TaskLaunch
from clusters.executors.docker import MARKER_LABEL
from jobs.actions import submit_job
from jobs.models import JobState
from scheduling import executors
from tests.factories import default_image

pytestmark = [pytest.mark.docker, pytest.mark.django_db, pytest.mark.slow]

LATE_START_LIMIT_S = 120


class LateRole:
    """The node's real executor (every call goes to it), except that a start of `role` waits until
    every other task of its job has exited (an engine that gets to that container last)."""

    def __init__(self, executor: Any, role: str, namespace: str) -> None:
        self.executor = executor
        self.role = role
        self.namespace = namespace
        self.held = 0  # starts of `role` that waited until the others had exited

    def __getattr__(self, name: str) -> Any:
        return getattr(self.executor, name)

    def start(self, launch: TaskLaunch) -> TaskHandle:
        if launch.role == self.role:
            self._wait_for_the_others(launch.job_id)
        return self.executor.start(launch)

    def _wait_for_the_others(self, job_id: int) -> None:
        api = docker.APIClient(timeout=30)
        labels = [f"{MARKER_LABEL}={self.namespace}", f"pai.job-id={job_id}"]
        deadline = time.monotonic() + LATE_START_LIMIT_S
        while time.monotonic() < deadline:
            found = api.containers(all=True, filters={"label": labels})
            others = [c for c in found if c["Labels"]["pai.role"] != self.role]
            if others and all(c["State"] == "exited" for c in others):
                self.held += 1
                return
            time.sleep(0.1)


@pytest.fixture
def ps_starts_last(docker_node, monkeypatch, namespace):
    real = executors.node_executor
    late: dict[str, LateRole] = {}

    def node_executor(node):
        late.setdefault("ps", LateRole(real(node), "ps", namespace))
        late["ps"].executor = real(node)
        return late["ps"]

    monkeypatch.setattr(executors, "node_executor", node_executor)
    return late


TWO_ROLES = f"""protocolVersion: 2
name: late-ps
type: job
prerequisites:
  - name: image
    type: dockerimage
    uri: {default_image()}
taskRoles:
  ps:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - echo ps up
  worker:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - getent hosts ps-0 || exit 3
      - getent hosts worker-0 || exit 4
"""


def test_a_workers_first_line_resolves_a_job_mate_that_starts_late(user, docker_node, ps_starts_last, run_until):
    job = run_until(submit_job(user, TWO_ROLES), JobState.SUCCEEDED, JobState.FAILED, timeout=240)

    assert ps_starts_last["ps"].held == 1  # (ps-0 really started once the worker had ended)
    assert job.state == JobState.SUCCEEDED, job.exit_diagnostics
    with open(job.tasks.get(role="worker").log_path) as log:
        assert f"{job.tasks.get(role='ps').ip} " in log.read()
