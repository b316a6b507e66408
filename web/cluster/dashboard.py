"""The cluster dashboard's numbers: VC usage and queues over time (VcSample, recorded by the
sampler: scheduling/vc_samples.py), nodes and their state, the longest-waiting jobs with their
reasons, and GPUs that running jobs hold but hardly use."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from catalogue.reasons import Reason
from clusters.models import Node
from jobs.models import Job, JobState, Task, TaskSample, TaskState
from scheduling.admission import never_fitting_jobs
from scheduling.models import VcSample
from scheduling.quota import cluster_usage, node_gpus

IDLE_GPU_PERCENT = 5  # a held GPU busier than this on average is in use
IDLE_WINDOW_S = 600  # ... averaged over the last ten minutes of samples
LONGEST_WAITING = 10
NEVER_FIT_SHOWN = 20
WAITING_SCANNED = 2000  # the oldest waiting jobs looked at for both lists
HISTORY_S = 24 * 3600


def gpu_type_totals() -> dict[str, int]:
    """GPUs of each type on the nodes placement may use."""
    totals: dict[str, int] = defaultdict(int)
    available = {node.pk for node in Node.objects.all() if node.available}
    for node_id, gpus in node_gpus().items():
        if node_id in available:
            for type_name in gpus.values():
                totals[type_name] += 1
    return dict(totals)


def vc_history(since: float) -> dict[str, Any]:
    """`{t: [...], vcs: {name: {gpus_used, gpus_free, jobs_waiting, jobs_running}}, gpu_types: {type:
    [GPUs used, all VCs]}, gpu_type_totals: {type: GPUs}}` on one time axis."""
    rows = VcSample.objects.filter(at__gte=int(since)).select_related("vc").order_by("at")
    times = sorted({row.at for row in rows})
    index = {at: i for i, at in enumerate(times)}
    fields = ("gpus_used", "gpus_free", "jobs_waiting", "jobs_running")
    vcs: dict[str, dict[str, list[int | None]]] = {}
    types: dict[str, list[int]] = {}
    for row in rows:
        for type_name, used in row.gpus_by_type.items():
            types.setdefault(type_name, [0] * len(times))[index[row.at]] += used
        series = vcs.setdefault(row.vc.name, {field: [None] * len(times) for field in fields})
        i = index[row.at]
        series["gpus_used"][i] = row.gpus_used
        series["gpus_free"][i] = max(0, row.gpus_quota - row.gpus_used)
        series["jobs_waiting"][i] = row.jobs_waiting
        series["jobs_running"][i] = row.jobs_running
    return {"t": times, "vcs": vcs, "gpu_types": types, "gpu_type_totals": gpu_type_totals()}


@dataclass
class IdleGpus:
    task: Task
    gpus: list[int]
    average_percent: int


def idle_gpus(now: float) -> list[IdleGpus]:
    """Running tasks whose GPUs averaged under IDLE_GPU_PERCENT busy over the last samples."""
    holding = Task.objects.filter(state=TaskState.RUNNING, job__state=JobState.RUNNING).exclude(gpus=[])
    tasks = {task.id: task for task in holding.select_related("job__owner", "node")}
    readings: dict[int, list[int]] = {}
    recent = TaskSample.objects.filter(task_id__in=tasks, at__gte=int(now - IDLE_WINDOW_S)).exclude(gpus=None)
    for task_id, gpus in recent.values_list("task_id", "gpus"):
        readings.setdefault(task_id, []).extend(row[1] for row in gpus or [])
    idle = []
    for task_id, values in readings.items():
        average = sum(values) / len(values)
        if average < IDLE_GPU_PERCENT:
            idle.append(IdleGpus(task=tasks[task_id], gpus=list(tasks[task_id].gpus), average_percent=round(average)))
    return idle


@dataclass
class Waiting:
    """The longest real waits, and apart from them the jobs that can never fit (however long
    they wait: they would fill the list and hide the real waits), each with why."""

    jobs: list[Job]
    never_fit: list[tuple[Job, Reason]]


def longest_waiting(jobs: QuerySet[Job]) -> Waiting:
    """The oldest waiting jobs, sorted by scheduling.admission's never-fits judgement (the
    scheduler's), over the oldest WAITING_SCANNED waiting jobs."""
    rows = list(
        jobs.filter(state=JobState.WAITING)
        .order_by("created_at", "id")
        .values_list("pk", "virtual_cluster__name")[:WAITING_SCANNED]
    )
    never = never_fitting_jobs(rows)
    waits = [job_id for job_id, _ in rows if job_id not in never][:LONGEST_WAITING]
    never_ids = [job_id for job_id, _ in rows if job_id in never][:NEVER_FIT_SHOWN]
    by_id = Job.objects.select_related("virtual_cluster", "owner").in_bulk(waits + never_ids)
    return Waiting(
        jobs=[by_id[job_id] for job_id in waits],
        never_fit=[(by_id[job_id], never[job_id]) for job_id in never_ids],
    )


def node_rows() -> list[dict[str, Any]]:
    nodes = list(Node.objects.prefetch_related("gpus__gpu_type"))
    usage = cluster_usage(nodes)
    rows = []
    for node in nodes:
        used = usage.used_by_node.get(node.pk)
        state = "down" if node.down_since else ("cordoned" if not node.schedulable else "up")
        rows.append(
            {
                "node": node,
                "state": state,
                "gpus_total": len(node.gpus.all()),
                "gpus_used": sum(1 for node_id, _ in usage.busy_gpus if node_id == node.pk),
                "cpus_used": used.cpu if used else 0,
                "memory_used_mb": used.memory_mb if used else 0,
            }
        )
    return rows


def history_window() -> float:
    return time.time() - HISTORY_S
