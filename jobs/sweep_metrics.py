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


def points(sweep: Sweep, name: str, goal: str) -> dict[str, Any]:
    """What the page's scatter and parallel coordinates draw: each run that reported `name` (in
    index order) with its values and its best and last value of it, as columns (a 1,000-run sweep
    in tens of KB): `{parameters: [{name, kind, categories?}], runs, values: [[...] per parameter],
    best, last}`. A parameter whose values are all numbers is a "number" axis, any other a
    "category" one (its distinct values, sorted); a parameter the same in every run is left out
    (unless every one is)."""
    rows = (
        MetricSeries.objects.filter(job__sweep=sweep, name=name)
        .order_by("job__sweep_index")
        .values_list("job__name", "job__sweep_values", "last_value", "min_value", "max_value")
    )
    shown, best, last = [], [], []
    for run, values, last_value, low, high in rows:  # (one query, however many runs)
        shown.append((run, values or {}))
        best.append(_short(low if goal == "min" else high))
        last.append(_short(last_value))
    names = list(dict.fromkeys(key for _, values in shown for key in values))
    columns = {key: [values.get(key) for _, values in shown] for key in names}
    varying = [key for key in names if len({repr(value) for value in columns[key]}) > 1] or names
    parameters = [_axis(key, columns[key]) for key in varying]
    return {
        "parameters": parameters,
        "runs": [run for run, _ in shown],
        "values": [_column(axis, columns[axis["name"]]) for axis in parameters],
        "best": best,
        "last": last,
    }


def _short(value: float) -> float:
    """Six significant digits, as the page shows them (a third of a float's JSON)."""
    return float(f"{value:.6g}")


def _axis(name: str, values: list[Any]) -> dict[str, Any]:
    if all(isinstance(value, int | float) and not isinstance(value, bool) for value in values):
        return {"name": name, "kind": "number"}
    return {"name": name, "kind": "category", "categories": sorted({str(value) for value in values})}


def _column(axis: dict[str, Any], values: list[Any]) -> list[Any]:
    return [str(value) for value in values] if axis["kind"] == "category" else values
