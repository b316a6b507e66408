"""A hung engine (its dockerd stopped with SIGSTOP, its containers running on) holds nobody: a job
on a free node starts within 2 s of its submit, the hung node is down within
PAI_NODE_DOWN_AFTER_SECONDS + one heartbeat, a gang's task on another node is stopped as soon as
its peer is recorded lost, and once the engine answers again the node is taken back and what it
ran before is removed.

The engines are the dev cluster's (scripts/dev-cluster.sh freeze-node / thaw-node); the scheduler
is the real one, passes run back to back as its loop runs them when busy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import docker
import pytest

from clusters.models import Node
from jobs.actions import submit_job
from jobs.models import Job, JobState, TaskState
from tests.factories import v2_yaml
from tests.multinode.conftest import NODE_CPUS, DevCluster, Engine

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db]

HEARTBEAT_S = 1.0
DOWN_AFTER_S = 6.0


@pytest.fixture
def quick_detection(settings):
    settings.PAI_NODE_HEARTBEAT_SECONDS = HEARTBEAT_S
    settings.PAI_NODE_DOWN_AFTER_SECONDS = DOWN_AFTER_S


@pytest.fixture
def scheduler(quick_detection):
    from scheduling.scheduler import Scheduler

    return Scheduler(holder="multinode-bulkhead-test")


@pytest.fixture
def freeze(dev_cluster: DevCluster) -> Iterator[Callable[[Engine], float]]:
    """Freeze an engine (returns when, in monotonic seconds); every frozen one thaws at the end."""
    frozen: list[Engine] = []

    def freeze_engine(engine: Engine) -> float:
        dev_cluster.run("freeze-node", str(engine.index))
        frozen.append(engine)
        return time.monotonic()

    yield freeze_engine
    for engine in frozen:
        dev_cluster.run("thaw-node", str(engine.index))


def refreshed(row):
    row.refresh_from_db()
    return row


def passes_until(condition: Callable[[], bool], scheduler, what: str, timeout: float, job: Job | None = None) -> float:
    """Scheduler passes back to back until the condition holds; returns when it did (monotonic).
    Should it time out, the job's timeline (if given) says what happened instead."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            timeline = list(job.events.values_list("message", flat=True)) if job else []
            pytest.fail(f"timed out waiting for {what}; the job's timeline: {timeline}")
        scheduler.run_once()
    return time.monotonic()


def started(job: Job) -> bool:
    return refreshed(job).state == JobState.RUNNING and not job.tasks.filter(executor_id="").exists()


def node_down(node: Node) -> bool:
    return refreshed(node).down_since is not None


def portal_containers(engine: Engine, namespace: str) -> list[dict]:
    api = docker.APIClient(base_url=engine.docker_url, timeout=60)
    return api.containers(all=True, filters={"label": f"pai.portal={namespace}"})


@pytest.fixture
def filling_the_second_node(user, default_vc, cluster_nodes, scheduler) -> Job:
    """A one-task job that takes all of the second node (the first one cordoned while it was placed)."""
    first, second = cluster_nodes
    Node.objects.filter(pk=first.pk).update(schedulable=False)
    job = submit_job(user, v2_yaml("filler", "sleep 600", cpu=NODE_CPUS))
    passes_until(lambda: started(job), scheduler, "the filler to start", 60)
    assert job.tasks.get().node_id == second.pk
    Node.objects.filter(pk=first.pk).update(schedulable=True)
    return job


def test_it_starts_a_job_on_a_free_node_within_2_s_while_another_engine_hangs(
    filling_the_second_node, user, cluster_nodes, dev_cluster, scheduler, freeze
):
    scheduler.run_once()  # (a pass that polls the filler on its node: the engine answered lately)
    freeze(dev_cluster.engines[1])
    submitted = time.monotonic()
    job = submit_job(user, v2_yaml("bystander", "sleep 600"))
    ran = passes_until(lambda: started(job), scheduler, "the bystander to start", 300)
    print(f"bystander started {ran - submitted:.1f} s after its submit")
    assert ran - submitted < 2.0
    assert job.tasks.get().node_id == cluster_nodes[0].pk


def test_it_marks_a_hung_engines_node_down_within_the_documented_time(
    filling_the_second_node, cluster_nodes, dev_cluster, scheduler, freeze
):
    scheduler.run_once()
    frozen_at = freeze(dev_cluster.engines[1])
    down_at = passes_until(lambda: node_down(cluster_nodes[1]), scheduler, "the node to be down", 300)
    print(f"hung node down {down_at - frozen_at:.1f} s after the freeze")
    assert down_at - frozen_at <= DOWN_AFTER_S + HEARTBEAT_S + 0.5
    [lost] = filling_the_second_node.attempts.all()
    assert lost.exit_code == -1001


def test_it_stops_a_gangs_task_on_another_node_once_its_peer_is_lost(
    user, default_vc, cluster_nodes, dev_cluster, scheduler, freeze, namespace
):
    job = submit_job(user, v2_yaml("gang", "sleep 600", instances=2, cpu=NODE_CPUS))  # one task per node
    passes_until(lambda: started(job), scheduler, "the gang to start", 60)
    scheduler.run_once()
    freeze(dev_cluster.engines[1])
    down_at = passes_until(lambda: node_down(cluster_nodes[1]), scheduler, "the node to be down", 300)
    survivor_gone = passes_until(
        lambda: not portal_containers(dev_cluster.engines[0], namespace), scheduler, "the survivor to stop", 300
    )
    print(f"the gang's surviving task stopped {survivor_gone - down_at:.1f} s after its peer's node went down")
    assert survivor_gone - down_at < 2.0
    assert refreshed(job).state == JobState.WAITING  # placed again (it fits once the node is back)


def test_it_takes_a_hung_node_back_and_removes_what_it_ran_once_it_answers(
    filling_the_second_node, cluster_nodes, dev_cluster, scheduler, freeze, namespace
):
    engine = dev_cluster.engines[1]
    [old] = portal_containers(engine, namespace)
    scheduler.run_once()
    freeze(engine)
    passes_until(lambda: node_down(cluster_nodes[1]), scheduler, "the node to be down", 300)
    dev_cluster.run("thaw-node", str(engine.index))
    passes_until(lambda: not node_down(cluster_nodes[1]), scheduler, "the node to be taken back", 60)
    passes_until(
        lambda: old["Id"] not in {c["Id"] for c in portal_containers(engine, namespace)},
        scheduler,
        "the lost task's container to be removed",
        30,
    )
    task = filling_the_second_node.tasks.get()
    passes_until(
        lambda: started(filling_the_second_node), scheduler, "the job to run again", 60, filling_the_second_node
    )
    assert refreshed(task).state == TaskState.RUNNING and task.attempt >= 1
