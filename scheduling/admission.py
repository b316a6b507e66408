"""Whether a job just submitted can ever run on the cluster as it is, asked of placement itself.

The submit page warns at once instead of leaving the job to wait without a word: the same
`never_fits` judgement the scheduler makes each pass (a job over its VC's whole quota, a task
bigger than any node), on the same inputs (scheduling.quota), less what runs now: whether a job
can ever fit depends on the nodes and the quotas alone.
"""

from __future__ import annotations

import time
from typing import Any

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from clusters.models import Gpu, GpuType, Node, VirtualCluster
from clusters.placement import NodeState, Reason, VcState, never_fitting, place
from jobs.models import Job
from scheduling.quota import SpecCache, cluster_capacity, job_request

CAPACITY_TTL_S = 2.0
_capacity: tuple[float, tuple[list[NodeState], dict[str, VcState]]] | None = None  # (read at, placement's inputs)


def submit_capacity() -> tuple[list[NodeState], dict[str, VcState]]:
    """The cluster as if idle, read at most every CAPACITY_TTL_S: every submit asks (three queries
    and the VCs' shares apportioned, a fifth of a submit's CPU). An admin's change reaches other
    processes within that time, this one at once (saving or deleting a node, a GPU, a GPU type or
    a VC forgets it). Placement leaves its inputs untouched, so one read serves many."""
    global _capacity
    now = time.monotonic()
    if _capacity is None or now - _capacity[0] > CAPACITY_TTL_S:
        _capacity = (now, cluster_capacity(list(Node.objects.all())))
    return _capacity[1]


@receiver([post_save, post_delete], sender=Node)
@receiver([post_save, post_delete], sender=Gpu)
@receiver([post_save, post_delete], sender=GpuType)
@receiver([post_save, post_delete], sender=VirtualCluster)
def forget_submit_capacity(**kwargs: Any) -> None:
    global _capacity
    _capacity = None


def never_fits_reason(job: Job) -> Reason | None:
    """Why the job can never fit the cluster as it is, or None when it may run some day. A Slurm
    VC's jobs are Slurm's to judge: it says why they wait (PartitionConfig...) once submitted."""
    if job.virtual_cluster.slurm_partition:
        return None
    node_states, vc_states = submit_capacity()
    request = job_request(job.pk, job.virtual_cluster.name, job.normalized)
    result = place(node_states, vc_states, [request])
    return result.pending.get(job.pk) if job.pk in result.never_fits else None


def never_fitting_jobs(jobs: list[tuple[int, str]]) -> dict[int, Reason]:
    """Of these (job id, VC name) pairs, the jobs that can never fit the cluster as it is, with
    why: the same judgement, made for many waiting jobs at once without placing them (Slurm
    VCs' jobs are left to Slurm, as above)."""
    slurm_vcs = set(VirtualCluster.objects.exclude(slurm_partition="").values_list("name", flat=True))
    jobs = [(job_id, vc) for job_id, vc in jobs if vc not in slurm_vcs]
    if not jobs:
        return {}
    node_states, vc_states = cluster_capacity(list(Node.objects.all()))
    specs = SpecCache().get_many(job_id for job_id, _ in jobs)
    requests = [job_request(job_id, vc, specs[job_id]) for job_id, vc in jobs if job_id in specs]
    return never_fitting(node_states, vc_states, requests)
