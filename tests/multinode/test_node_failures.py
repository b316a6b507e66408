"""A node whose engine stops while its task runs: the heartbeat marks it down, the task is retried
on the other node, the API says so, and the node is taken back once its engine runs again.

The engines are the dev cluster's (scripts/dev-cluster.sh stop-node / start-node); the scheduler
is the real loop with a fast heartbeat.
"""

from __future__ import annotations

import docker
import pytest

from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import Job, JobState, TaskState
from tests.api.conftest import bearer_client
from tests.factories import v2_yaml
from tests.multinode.conftest import NODE_CPUS

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def fast_heartbeat(settings):
    settings.PAI_NODE_HEARTBEAT_SECONDS = 0
    settings.PAI_NODE_DOWN_AFTER_SECONDS = 1


@pytest.fixture
def scheduler():
    from scheduling.scheduler import Scheduler

    return Scheduler(holder="multinode-failure-test")


@pytest.fixture
def job_on_second_node(user, default_vc, cluster_nodes, scheduler, wait_for, fast_heartbeat) -> Job:
    """A one-task job running on the second node (the first one cordoned while it was placed)."""
    first, second = cluster_nodes
    Node.objects.filter(pk=first.pk).update(schedulable=False)
    job = submit_job(user, v2_yaml("survivor", "sleep 600"))
    task = job.tasks.get()
    wait_for(lambda: bool(refreshed(task).executor_id), scheduler.run_once, "the task to start")
    assert task.node_id == second.pk
    Node.objects.filter(pk=first.pk).update(schedulable=True)
    return job


def refreshed(row):
    row.refresh_from_db()
    return row


def second_node_down(cluster_nodes) -> bool:
    return refreshed(cluster_nodes[1]).down_since is not None


def test_it_retries_the_task_of_a_stopped_engine_on_the_other_node(
    job_on_second_node, cluster_nodes, dev_cluster, scheduler, wait_for
):
    first, second = cluster_nodes
    dev_cluster.stop_engine(dev_cluster.engines[1])
    task = job_on_second_node.tasks.get()
    wait_for(
        lambda: refreshed(task).node_id == first.pk and bool(task.executor_id) and task.state == TaskState.RUNNING,
        scheduler.run_once,
        "the task to run again on the first node",
    )
    [lost] = job_on_second_node.attempts.filter(node_name=second.name)
    assert lost.exit_code == -1001
    assert "did not answer" in lost.exit_diagnostics


def test_it_shows_a_stopped_engines_node_as_down_with_the_reason_in_the_api(
    job_on_second_node, cluster_nodes, dev_cluster, scheduler, wait_for, user
):
    dev_cluster.stop_engine(dev_cluster.engines[1])
    wait_for(lambda: second_node_down(cluster_nodes), scheduler.run_once, "the node to be marked down")
    node = bearer_client(user).get(f"/api/v2/nodes/{cluster_nodes[1].name}").json()
    assert node["state"] == "DOWN" and node["downSince"] is not None
    assert "did not answer" in node["downReason"]


def test_it_takes_a_node_back_when_its_engine_runs_again(
    job_on_second_node, cluster_nodes, dev_cluster, scheduler, wait_for, user
):
    engine = dev_cluster.engines[1]
    dev_cluster.stop_engine(engine)
    wait_for(lambda: second_node_down(cluster_nodes), scheduler.run_once, "the node to be marked down")
    dev_cluster.start_engine(engine)
    wait_for(lambda: not second_node_down(cluster_nodes), scheduler.run_once, "the node to be taken back")
    assert bearer_client(user).get(f"/api/v2/nodes/{engine.name}").json()["state"] == "READY"


def test_it_removes_what_a_returning_node_ran_before_it_was_lost(
    job_on_second_node, cluster_nodes, dev_cluster, scheduler, wait_for, namespace
):
    engine = dev_cluster.engines[1]
    dev_cluster.stop_engine(engine)
    wait_for(lambda: second_node_down(cluster_nodes), scheduler.run_once, "the node to be marked down")
    dev_cluster.start_engine(engine)
    api = docker.APIClient(base_url=engine.docker_url, timeout=60)
    assert api.containers(all=True, filters={"label": f"pai.portal={namespace}"}), "the lost task's container"
    wait_for(lambda: not second_node_down(cluster_nodes), scheduler.run_once, "the node to be taken back")
    assert api.containers(all=True, filters={"label": f"pai.portal={namespace}"}) == []


def test_it_keeps_a_job_that_fits_nowhere_else_waiting_until_the_lost_node_returns(
    user, default_vc, cluster_nodes, dev_cluster, scheduler, wait_for, fast_heartbeat
):
    job = submit_job(user, v2_yaml("wide", "sleep 600", instances=2, cpu=NODE_CPUS))  # one task per node
    wait_for(lambda: refreshed(job).tasks.exclude(executor_id="").count() == 2, scheduler.run_once, "the job to run")
    engine = dev_cluster.engines[1]
    dev_cluster.stop_engine(engine)
    waiting = lambda: refreshed(job).state == JobState.WAITING and bool(job.pending_reason)  # noqa: E731
    wait_for(waiting, scheduler.run_once, "the job to wait")
    assert f"node {engine.name} is down" in job.pending_reason
    dev_cluster.start_engine(engine)
    wait_for(
        lambda: refreshed(job).state == JobState.RUNNING and job.tasks.exclude(executor_id="").count() == 2,
        scheduler.run_once,
        "the job to run on both nodes again",
    )
    assert {task.node_id for task in job.tasks.all()} == {node.pk for node in cluster_nodes}
