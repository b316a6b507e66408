"""A job's training metrics as read back: series per task and name (whole for the API and the
CSV, downsampled for the job page's plot) and what was left out. The sampler writes them
(scheduling/training_metrics.py); docs/user/metrics.md says how a task reports them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db.models import Q, Sum

from jobs.models import Job, MetricPoint, MetricSource
from jobs.protocol.metrics import downsample

PLOT_POINTS = 1000  # a plotted series at most about this many points (the CSV has them all)
CSV_COLUMNS = ("task", "metric", "step", "value", "read_at")


def job_metrics(job: Job, *, most: int | None = None, name: str | None = None) -> dict[str, Any]:
    """`{cap, points, dropped, badLines, names, series: [{task, name, steps, values}]}`: every
    series of the job (of `name` alone when given), each at most about `most` points."""
    tasks = {task.pk: f"{task.role}-{task.index}" for task in job.tasks.only("pk", "role", "index")}
    rows = MetricPoint.objects.filter(job=job)
    if name:
        rows = rows.filter(name=name)
    series: dict[tuple[str, str], tuple[list[int], list[float]]] = {}
    for task_id, metric, step, value in rows.order_by("name", "task_id", "step").values_list(
        "task_id", "name", "step", "value"
    ):
        steps, values = series.setdefault((tasks.get(task_id, "?"), metric), ([], []))
        steps.append(step)
        values.append(value)
    counts = MetricSource.objects.filter(task__job=job).aggregate(dropped=Sum("dropped"), bad=Sum("bad_lines"))
    answer = []
    for (task, metric), (steps, values) in series.items():
        if most is not None:
            steps, values = downsample(steps, values, most)
        answer.append({"task": task, "name": metric, "steps": steps, "values": values})
    return {
        "cap": settings.PAI_METRICS_MAX_POINTS,
        "points": sum(len(steps) for steps, _ in series.values()),
        "dropped": counts["dropped"] or 0,
        "badLines": counts["bad"] or 0,
        "names": sorted(job.metric_series.values_list("name", flat=True)),
        "series": answer,
    }


def csv_rows(job: Job) -> Iterator[list[Any]]:
    """Every point of the job, by metric, task and step, read a page at a time."""
    tasks = {task.pk: f"{task.role}-{task.index}" for task in job.tasks.only("pk", "role", "index")}
    last: tuple[Any, Any, Any] = (None, None, None)
    while True:
        page = _page_after(job, last)
        if not page:
            return
        for task_id, name, step, value, at in page:
            yield [tasks.get(task_id, "?"), name, step, value, at]
        last = page[-1][1], page[-1][0], page[-1][2]


def _page_after(job: Job, last: tuple[Any, Any, Any], size: int = 5000) -> list[tuple[int, str, int, float, int]]:
    """The next `size` points after (name, task, step) `last`, in that order: a keyset page (no
    cursor held between pieces of a streamed answer)."""
    rows = MetricPoint.objects.filter(job=job)
    name, task_id, step = last
    if name is not None:
        rows = rows.filter(
            Q(name__gt=name) | Q(name=name, task_id__gt=task_id) | Q(name=name, task_id=task_id, step__gt=step)
        )
    return list(rows.order_by("name", "task_id", "step").values_list("task_id", "name", "step", "value", "at")[:size])
