"""A Slurm controller that does not answer (slurmctld stopped with SIGSTOP) holds nobody: a job on
the portal's own nodes starts within 2 s of its submit, the partition's nodes are down saying why
within PAI_NODE_DOWN_AFTER_SECONDS + one heartbeat (and each waiting job of its VC says so), a
Stop completes on the portal's side; once slurmctld answers again the nodes come back and what the
Stop could not cancel in Slurm is cancelled, by this scheduler or a restarted one.

The scheduler is the real one, its passes back to back as its loop runs them when busy.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator

import pytest
from django.urls import reverse

from clusters.models import Node
from jobs.actions import stop_job, submit_job
from jobs.models import Job, JobState
from tests.factories import v2_yaml
from tests.slurm.conftest import SlurmCluster
from tests.slurm.test_slurm_jobs import job_text, role

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

HEARTBEAT_S = 1.0
DOWN_AFTER_S = 4.0
SAYS = "the Slurm controller does not answer"


@pytest.fixture
def quick_detection(settings):
    settings.PAI_NODE_HEARTBEAT_SECONDS = HEARTBEAT_S
    settings.PAI_NODE_DOWN_AFTER_SECONDS = DOWN_AFTER_S


@pytest.fixture
def scheduler(quick_detection):
    from scheduling.scheduler import Scheduler

    return Scheduler(holder="slurm-silent-test")


@pytest.fixture
def process_node(slurm_vc, default_vc):
    """A node of the portal's own (process executor) beside the Slurm partition."""
    from clusters.executors.registry import executor_for

    node = Node.objects.create(name="local", executor="process", cpus=4, memory_mb=8192)
    yield node
    executor = executor_for("process", node.address)
    for task in executor.list_running():
        executor.stop(task.handle)


@pytest.fixture
def freeze(slurm_cluster: SlurmCluster) -> Iterator[Callable[[], float]]:
    """Stop slurmctld (returns when, in monotonic seconds); it continues at the end whatever happened."""
    frozen = []

    def freeze_controller() -> float:
        slurm_cluster.signal_slurmctld(signal.SIGSTOP)
        frozen.append(True)
        return time.monotonic()

    yield freeze_controller
    if frozen:
        slurm_cluster.signal_slurmctld(signal.SIGCONT)


def thaw(slurm_cluster: SlurmCluster) -> None:
    slurm_cluster.signal_slurmctld(signal.SIGCONT)


def passes_until(condition: Callable[[], bool], scheduler, what: str, timeout: float) -> float:
    """Scheduler passes back to back until the condition holds; returns when it did (monotonic)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        scheduler.run_once()
    return time.monotonic()


def refreshed(row):
    row.refresh_from_db()
    return row


def started(job: Job) -> bool:
    return refreshed(job).state == JobState.RUNNING and not job.tasks.filter(executor_id="").exists()


def slurm_nodes_down() -> bool:
    nodes = Node.objects.filter(executor="slurm")
    return nodes.exists() and not nodes.filter(down_since__isnull=True).exists()


def slurm_job(user, name: str, command: str) -> Job:
    return submit_job(user, job_text(name, role("worker", command), extra="defaults: {virtualCluster: gpu}\n"))


def test_it_starts_a_job_on_a_portal_node_within_2_s_while_the_slurm_controller_hangs(
    process_node, user, scheduler, freeze
):
    waiting = slurm_job(user, "queued", "sleep 300")  # (the Slurm pass has work: sinfo, squeue)
    passes_until(lambda: refreshed(waiting).pending_reason != "", scheduler, "the Slurm job to be submitted", 30)
    freeze()
    scheduler.run_once()  # (the pass that finds the controller silent)
    submitted = time.monotonic()
    job = submit_job(user, v2_yaml("bystander", "sleep 300"))
    ran = passes_until(lambda: started(job), scheduler, "the bystander to start", 120)
    print(f"bystander started {ran - submitted:.1f} s after its submit")
    assert ran - submitted < 2.0


def test_it_marks_the_partitions_nodes_down_and_its_waiting_jobs_say_why_until_the_controller_is_back(
    slurm_cluster, slurm_vc, user, scheduler, freeze, client
):
    passes_until(lambda: Node.objects.filter(executor="slurm", slurm_state="idle").count() == 3, scheduler, "sinfo", 30)
    frozen_at = freeze()
    waiting = slurm_job(user, "queued", "true")
    down_at = passes_until(slurm_nodes_down, scheduler, "the Slurm nodes to be down", 120)
    print(f"Slurm nodes down {down_at - frozen_at:.1f} s after slurmctld stopped")
    assert down_at - frozen_at <= DOWN_AFTER_S + HEARTBEAT_S + 0.5
    for node in Node.objects.filter(executor="slurm"):
        assert node.down_reason.startswith(SAYS), node.down_reason
        assert node.down_reason_messages[0]["code"] == "slurm.controller_silent"
    scheduler.run_once()
    assert refreshed(waiting).pending_reason.startswith(SAYS), waiting.pending_reason
    assert waiting.pending_reason_messages[0]["code"] == "slurm.controller_silent"
    client.force_login(user)
    listed = {node["name"]: node for node in client.get("/api/v2/nodes").json()}
    assert {listed[name]["state"] for name in slurm_cluster.addresses} == {"DOWN"}
    assert listed[next(iter(slurm_cluster.addresses))]["downReason"].startswith(SAYS)
    assert listed[next(iter(slurm_cluster.addresses))]["downReasonMessages"][0]["code"] == "slurm.controller_silent"
    page = client.get(reverse("scheduling:overview")).content.decode()
    assert page.count(f": {SAYS}") == 3 and f"partition {slurm_cluster.name}: unknown" in page

    thaw(slurm_cluster)
    passes_until(lambda: not Node.objects.filter(executor="slurm", down_since__isnull=False).exists(), scheduler,
                 "the Slurm nodes to come back", 60)  # fmt: skip
    passes_until(lambda: refreshed(waiting).state == JobState.SUCCEEDED, scheduler, "the waiting job to run", 60)


def test_a_stop_completes_while_the_controller_hangs_and_a_restarted_scheduler_cancels_in_slurm_once_it_is_back(
    slurm_cluster, slurm_vc, user, scheduler, freeze
):
    from scheduling.scheduler import Scheduler

    job = slurm_job(user, "long", "sleep 300")
    passes_until(lambda: started(job), scheduler, "the Slurm job to start", 60)
    assert slurm_cluster.active_jobs()
    freeze()
    stop_job(job, user)
    asked = time.monotonic()
    stopped = passes_until(lambda: refreshed(job).state == JobState.STOPPED, scheduler, "the stop", 120)
    print(f"stop completed {stopped - asked:.1f} s after it was asked")
    assert stopped - asked < 2.0
    thaw(slurm_cluster)
    restarted = Scheduler(holder="slurm-silent-test")  # what it remembers of the cancel is in the rows
    deadline = time.monotonic() + 30
    while slurm_cluster.active_jobs():
        assert time.monotonic() < deadline, f"still active in Slurm: {slurm_cluster.active_jobs()}"
        restarted.run_once()
        time.sleep(0.1)
