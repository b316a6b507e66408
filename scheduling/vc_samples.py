"""Each VC's usage and queue, recorded every minute by the sampler (VcSample) for the dashboard's
history (web/cluster/dashboard.py reads it)."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count

from clusters.models import Node, VirtualCluster
from jobs.models import Job, JobState, Task, TaskState
from scheduling.models import VcSample
from scheduling.quota import cluster_usage, node_gpus


def record_vc_samples(now: float) -> None:
    usage = cluster_usage(list(Node.objects.all()))
    by_type = _gpus_by_vc_and_type()
    counts = {
        (vc_id, state): n
        for vc_id, state, n in Job.objects.filter(state__in=[JobState.WAITING, JobState.RUNNING])
        .order_by()
        .values_list("virtual_cluster_id", "state")
        .annotate(n=Count("id"))
    }
    VcSample.objects.bulk_create(
        VcSample(
            vc=vc,
            at=int(now),
            gpus_used=usage.vcs[vc.name].used.gpu,
            gpus_quota=usage.vcs[vc.name].limit.gpu,
            jobs_waiting=counts.get((vc.pk, JobState.WAITING), 0),
            jobs_running=counts.get((vc.pk, JobState.RUNNING), 0),
            gpus_by_type=by_type.get(vc.pk, {}),
        )
        for vc in VirtualCluster.objects.all()
        if vc.name in usage.vcs
    )


def _gpus_by_vc_and_type() -> dict[int, dict[str, int]]:
    """VC id -> {GPU type: GPUs its running tasks hold}."""
    types = node_gpus()
    held: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    running = Task.objects.filter(state=TaskState.RUNNING, job__state=JobState.RUNNING, node__isnull=False)
    for node_id, gpus, vc_id in running.exclude(gpus=[]).values_list("node_id", "gpus", "job__virtual_cluster_id"):
        for index in gpus:
            held[vc_id][types.get(node_id, {}).get(int(index), "?")] += 1
    return {vc_id: dict(counts) for vc_id, counts in held.items()}
