"""A job's node-side leftovers (its network, a /24 of the job subnet pool) are removed in the end
whatever happened to the first try: a clean-up the engine did not finish within its node-call
deadline is done again by a later pass, and what a crashed scheduler never cleaned up is swept by
the next one's reconcile."""

from __future__ import annotations

import time
from typing import Any

import docker
import pytest
import requests

from clusters.executors.docker import DockerExecutor
from clusters.executors.registry import executor_for
from jobs.actions import submit_job
from jobs.models import Job, JobState
from tests.factories import v2_yaml

pytestmark = [pytest.mark.docker, pytest.mark.django_db, pytest.mark.slow]

DEADLINE_S = 2.0  # (a busy box's engine answers a call in well under that)


@pytest.fixture
def short_deadlines(settings):
    settings.PAI_NODE_CALL_DEADLINE_SECONDS = DEADLINE_S
    settings.PAI_NODE_HEARTBEAT_SECONDS = 0.2
    settings.PAI_NODE_DOWN_AFTER_SECONDS = 120  # (a late answer never takes the node down here)


def network_of(job: Job, namespace: str) -> list[dict[str, Any]]:
    name = f"{namespace}-job-{job.pk}"
    return [n for n in docker.APIClient(timeout=30).networks(names=[name]) if n["Name"] == name]


def passes_until_gone(scheduler: Any, job: Job, namespace: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while network_of(job, namespace):
        assert time.monotonic() < deadline, f"job {job.pk}'s network is still on the node"
        scheduler.run_once()
        time.sleep(0.1)


def test_a_network_removal_past_its_deadline_is_done_by_a_later_pass(
    user, docker_node, short_deadlines, scheduler, run_until, namespace, monkeypatch
):
    executor = executor_for(docker_node.executor, docker_node.address, docker_node.docker_url)
    assert isinstance(executor, DockerExecutor)
    engine = executor.api
    remove_network = engine.remove_network
    calls = []

    def hangs_once(network_id: str) -> None:
        calls.append(network_id)
        if len(calls) == 1:  # the engine answers nothing, and the client gives up
            time.sleep(DEADLINE_S + 0.5)
            raise requests.exceptions.ReadTimeout("read timed out")
        remove_network(network_id)

    monkeypatch.setattr(engine, "remove_network", hangs_once)
    job = run_until(submit_job(user, v2_yaml("short", "echo done")), JobState.SUCCEEDED)
    assert network_of(job, namespace)  # (its clean-up has been tried, and did not end in time)

    passes_until_gone(scheduler, job, namespace)
    assert len(calls) >= 2


def test_reconcile_removes_the_network_a_crashed_scheduler_left(
    user, docker_node, scheduler, new_scheduler, run_until, namespace, monkeypatch
):
    executor = executor_for(docker_node.executor, docker_node.address, docker_node.docker_url)
    monkeypatch.setattr(executor, "cleanup_job", lambda job_id, keep=False: None)  # (it died before)
    job = run_until(submit_job(user, v2_yaml("short", "echo done")), JobState.SUCCEEDED)
    assert network_of(job, namespace)

    passes_until_gone(new_scheduler(), job, namespace)
