"""The adaptive search duty's cost per pass (jobs/sweep_search.advance) with and without the curve
cache (jobs/sweep_curves.py), in a throwaway SQLite DB under var/bench/: a search of `--runs` runs
that reported `--steps` points each, `--running` of them still running and reporting one new point
a pass, the rest finished.

    .venv/bin/python bench/search_duty.py [--runs 64] [--steps 20] [--running 8] [--passes 20]

Issue 47: a finished run's points never change; the duty reads them once, and only the new points
of the running runs each pass. Prints each way's median pass (ms), its queries and points read.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.joblist import setup_django  # noqa: E402  (after sys.path)
from bench.sweeps import sweep_text  # noqa: E402


def search_text(runs: int) -> str:
    """bench/sweeps.py's job, its random sweep made an adaptive search of `runs` trials."""
    job = sweep_text(runs).split("extras:")[0]
    space = "{lr: {min: 0.00001, max: 0.1, log: true}, layers: {min: 2, max: 12, integer: true}, opt: [adam, sgd]}"
    search = f"{{algorithm: random, metric: loss, trials: {runs}, maxConcurrent: {runs}, seed: 1, parameters: {space}}}"
    return f"{job}extras:\n  sweep:\n    search: {search}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--running", type=int, default=8)
    parser.add_argument("--passes", type=int, default=20)
    args = parser.parse_args()
    setup_django(fresh=True)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs.models import JobState, MetricPoint, MetricSeries, Sweep
    from jobs.sweep_search import advance

    try:
        from jobs.sweep_curves import CurveCache
    except ImportError:  # (a checkout from before the cache: the first way alone)
        CurveCache = None  # type: ignore[assignment,misc]
    from jobs.sweeps import runs, submit_sweep

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("alice", password="bench-password")
    sweep = submit_sweep(user, search_text(args.runs))
    jobs = list(runs(sweep).prefetch_related("tasks"))
    points, series = [], []
    for number, job in enumerate(jobs):
        task = job.tasks.all()[0]
        lr = job.sweep_values["lr"]
        values = [abs(lr - 0.01) + 5 / step for step in range(1, args.steps + 1)]
        points += [
            MetricPoint(job=job, task=task, name="loss", step=step, value=value, at=1)
            for step, value in enumerate(values, start=1)
        ]
        low, high = min(values), max(values)
        last = values[-1]
        series.append(
            MetricSeries(job=job, name="loss", points=args.steps, last_value=last, min_value=low, max_value=high)
        )
        state = JobState.RUNNING if number < args.running else JobState.SUCCEEDED
        type(job).objects.filter(pk=job.pk).update(state=state)
    MetricPoint.objects.bulk_create(points, batch_size=2000)
    MetricSeries.objects.bulk_create(series)
    MetricSeries.objects.update(last_step=args.steps)
    running = jobs[: args.running]

    def report(step: int) -> None:
        """Each running run's next point, as the sampler writes it (the point, its series)."""
        for job in running:
            task = job.tasks.all()[0]
            MetricPoint.objects.create(job=job, task=task, name="loss", step=step, value=1.0, at=step)
            MetricSeries.objects.filter(job=job, name="loss").update(points=step)

    print(f"\nadaptive search duty: {args.runs} runs x {args.steps} steps, {args.running} running, SQLite\n")
    print(f"{'way':44} {'p50 ms':>8} {'max ms':>8} {'queries':>8} {'points read':>12}")
    step = args.steps
    ways: list[tuple[str, Any]] = [("every point of every run, every pass (before)", None)]
    if CurveCache is not None:
        ways.append(("curve cache (after)", CurveCache()))
    for label, cache in ways:
        timings, queries, read = [], [], []
        for _ in range(args.passes):
            step += 1
            report(step)
            fetched = cache.points_read if cache else 0
            with CaptureQueriesContext(connection) as captured:
                began = time.perf_counter()
                if cache is None:
                    advance(Sweep.objects.get(pk=sweep.pk))
                else:
                    advance(Sweep.objects.get(pk=sweep.pk), cache)
                timings.append((time.perf_counter() - began) * 1000)
            queries.append(len(captured))
            read.append(cache.points_read - fetched if cache else MetricPoint.objects.filter(name="loss").count())
        steady = slice(1, None)  # (the cache's first pass reads everything, as before)
        print(
            f"{label:44} {statistics.median(timings[steady]):8.1f} {max(timings[steady]):8.1f} "
            f"{statistics.median(queries[steady]):8.0f} {statistics.median(read[steady]):12.0f}"
        )
        print(f"{'  first pass':44} {timings[0]:8.1f} {'':>8} {queries[0]:8d} {read[0]:12d}")


if __name__ == "__main__":
    main()
