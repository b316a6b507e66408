"""A job's resource samples as plot series (per task and summed), and the peaks its exit
explanation quotes. The samples are written by scheduling.sampler."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Max, Q
from django.utils import timezone

from jobs.models import Job, Task, TaskAttempt, TaskSample, TaskState

# Every run of a task, once: the ended attempts are TaskAttempt rows, and a Task row is a run of
# its own only while its attempt runs (once ended it holds the same times as its TaskAttempt).
RUN_IN_PROGRESS = Q(state=TaskState.RUNNING)

SERIES = (
    "cpu",
    "memory_mb",
    "net_rx_kbps",
    "net_tx_kbps",
    "disk_read_kbps",
    "disk_write_kbps",
    "gpu_util",
    "gpu_memory_mb",
)


def job_usage(job: Job, since: int = 0) -> dict[str, Any]:
    """`{tasks: [{name, limit_mb, t, cpu, memory_mb, ...}], total: {t, cpu, ...}}`; times in
    epoch seconds, CPU in cores, rates in KB/s: what the job page's uPlot charts draw."""
    tasks = {task.id: task for task in job.tasks.order_by("role", "index")}
    samples = TaskSample.objects.filter(task__job=job, at__gt=since).order_by("at", "id")
    per_task: dict[int, dict[str, list[Any]]] = {task_id: defaultdict(list) for task_id in tasks}
    totals: dict[int, dict[str, float]] = {}
    for sample in samples.iterator(chunk_size=2000):
        point = _point(sample)
        series = per_task[sample.task_id]
        series["t"].append(sample.at)
        for name in SERIES:
            series[name].append(point[name])
        bucket = totals.setdefault(sample.at, dict.fromkeys(SERIES, 0.0))
        for name in SERIES:
            bucket[name] += point[name] or 0
    return {
        "tasks": [
            {"name": f"{task.role}-{task.index}", "limit_mb": memory_limit_mb(task), **per_task[task_id]}
            for task_id, task in tasks.items()
        ],
        "total": {"t": sorted(totals), **{name: [totals[at][name] for at in sorted(totals)] for name in SERIES}},
    }


def _point(sample: TaskSample) -> dict[str, float | None]:
    gpus = sample.gpus or []
    return {
        "cpu": sample.cpu_milli / 1000,
        "memory_mb": sample.memory_mb,
        "net_rx_kbps": sample.net_rx_kbps,
        "net_tx_kbps": sample.net_tx_kbps,
        "disk_read_kbps": sample.disk_read_kbps,
        "disk_write_kbps": sample.disk_write_kbps,
        "gpu_util": sum(g[1] for g in gpus) / len(gpus) if gpus else None,
        "gpu_memory_mb": sum(g[2] for g in gpus) if gpus else None,
    }


def memory_limit_mb(task: Task) -> int:
    """The task's memory limit: its role's memoryMB (what the executor gives the container)."""
    return int(task.job.normalized["taskRoles"][task.role]["resourcePerInstance"]["memoryMB"])


def peak_memory_mb(task: Task) -> int | None:
    """The highest memory the task was seen using (any attempt), or None with no samples."""
    return task.samples.aggregate(peak=Max("memory_mb"))["peak"]


def gpu_hours_held(job: Job) -> float:
    """The GPU time every run of the job's tasks held (retries included), in hours."""
    now = timezone.now()
    seconds = 0.0
    for runs in (Task.objects.filter(RUN_IN_PROGRESS), TaskAttempt.objects.all()):
        for gpus, started, finished in runs.filter(job=job, started_at__isnull=False).values_list(
            "gpus", "started_at", "finished_at"
        ):
            if started is not None:  # (the filter says so; the type does not)
                seconds += len(gpus or []) * max(0.0, ((finished or now) - started).total_seconds())
    return round(seconds / 3600, 2)
