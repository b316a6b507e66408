"""A sweep's runs compared by one training metric: each run's last and best value (from its
MetricSeries, one query however many runs), the best run, and the curves of the top runs
(docs/user/metrics.md, "Comparing a sweep's runs")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobs.models import MetricPoint, MetricSeries, Sweep
from jobs.protocol.metrics import downsample

GOALS = ("min", "max")
TOP_DEFAULT, TOP_MOST = 5, 20
CURVE_POINTS = 500  # each overlaid curve at most about this many points


@dataclass(frozen=True)
class RunMetric:
    last: float
    best: float
    last_step: int


def metric_names(sweep: Sweep) -> list[str]:
    """Every metric any run of the sweep reported."""
    return sorted(set(MetricSeries.objects.filter(job__sweep=sweep).values_list("name", flat=True)))


def default_goal(name: str) -> str:
    """Lower is better for a loss or an error, higher for the rest (accuracy, reward...)."""
    lowered = name.lower()
    return "min" if any(word in lowered for word in ("loss", "err", "perplexity", "mse", "mae", "rmse")) else "max"


def run_metrics(sweep: Sweep, name: str, goal: str) -> dict[str, RunMetric]:
    """Each run's (by job name) last and best value of `name`."""
    rows = MetricSeries.objects.filter(job__sweep=sweep, name=name).values_list(
        "job__name", "last_value", "min_value", "max_value", "last_step"
    )
    return {
        job: RunMetric(last=last, best=low if goal == "min" else high, last_step=step)
        for job, last, low, high, step in rows
    }


def ranked(metrics: dict[str, RunMetric], goal: str) -> list[str]:
    """The runs' names, best first."""
    return sorted(metrics, key=lambda run: metrics[run].best, reverse=goal == "max")


def curves(sweep: Sweep, name: str, runs: list[str]) -> list[dict[str, Any]]:
    """`name`'s curve of each of `runs` (in that order; a run of several tasks: its first task's
    that reported it), downsampled: `[{run, steps, values}]`."""
    jobs = dict(sweep.runs.filter(name__in=runs).values_list("pk", "name"))
    found: dict[int, tuple[int, list[int], list[float]]] = {}
    points = MetricPoint.objects.filter(job_id__in=jobs, name=name).order_by("job_id", "task_id", "step")
    for job_id, task_id, step, value in points.values_list("job_id", "task_id", "step", "value").iterator(2000):
        first_task, steps, values = found.setdefault(job_id, (task_id, [], []))
        if task_id == first_task:
            steps.append(step)
            values.append(value)
    by_name = {jobs[job_id]: series for job_id, series in found.items()}
    answer = []
    for run in runs:
        if run in by_name:
            steps, values = downsample(by_name[run][1], by_name[run][2], CURVE_POINTS)
            answer.append({"run": run, "steps": steps, "values": values})
    return answer
