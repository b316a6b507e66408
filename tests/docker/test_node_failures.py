"""Nodes whose engine never answers, and engines that refuse a job's network, end in a reason
the user can read; no job stays RUNNING on them."""

import socket
import uuid

import pytest

from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import JobState
from tests.factories import v2_yaml

pytestmark = pytest.mark.docker


def test_it_marks_a_node_whose_engine_never_answers_down_and_keeps_the_job_waiting_with_why(
    user, docker_node, run_until, scheduler
):
    Node.objects.filter(pk=docker_node.pk).update(docker_url="unix:///run/pai-no-such-engine.sock")
    job = run_until(submit_job(user, v2_yaml("dead-node", "echo never")), JobState.WAITING, timeout=20)
    scheduler.run_once()  # placed, failed to start, requeued free of charge; now it says why
    job.refresh_from_db()
    node = Node.objects.get(pk=docker_node.pk)
    assert node.down_since is not None and "No such file or directory" in node.down_reason
    # (The portal's sentence; the engine's client's words in it as it said them.)
    assert [part["code"] for part in node.down_reason_messages] == ["exit.start.no_network"]
    assert "node docker-local is down" in job.pending_reason
    assert job.pending_reason_messages[-1]["code"] == "reason.node_down"
    assert job.attempts.get().exit_code == -1001


def test_it_fails_a_job_whose_network_cannot_be_made_with_the_reason(user, docker_node, run_until, settings):
    from clusters.executors.registry import executor_for

    settings.PAI_DOCKER_SUBNET_POOL = "172.17.0.0/24"  # inside docker0's own subnet: nothing free
    executor_for.cache_clear()
    job = run_until(submit_job(user, v2_yaml("no-subnet", "echo never")), JobState.FAILED)
    assert job.exit_code == -1201
    assert "no free /24 subnet" in job.exit_diagnostics


def test_it_retries_a_task_whose_port_another_program_holds_on_other_ports(user, docker_node, run_until):
    low = 41000 + uuid.uuid4().int % 20000  # a range of its own: other tests' containers use 20000+
    Node.objects.filter(pk=docker_node.pk).update(port_range_start=low, port_range_end=low + 50)
    with socket.socket() as squatter:  # a program outside the portal holds the first port
        squatter.bind(("127.0.0.1", low))
        squatter.listen()
        job = run_until(submit_job(user, v2_yaml("port-clash", ports="{http: 1}")), JobState.SUCCEEDED, timeout=60)
    clash, success = job.attempts.order_by("id")
    assert clash.exit_code == 253 and clash.ports["http"] == [low]
    assert success.exit_code == 0 and low not in success.ports["http"]
