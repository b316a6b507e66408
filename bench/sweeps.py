"""Sweep benchmark: a sweep of 1,000 runs submitted through jobs.sweeps.submit_sweep (the page's and
the API's verb), then its page, its API and a pass of the scheduler's dependency judge timed, in a
throwaway SQLite DB under var/bench/.

    .venv/bin/python bench/sweeps.py [--runs 1000] [--requests 60]

Goals (issue 34): the submit under 5 s; the sweep page's p95 under 300 ms (issue 47: with every
run's loss compared, 20 steps of it each; the charts' points.json and the top curves' curves.json
timed and weighed too). Issue 44: a sweep too big
to make (10^12 grid points, 10^6 random samples, an array's items summing past the cap, runs times
a long config) refused in under 50 ms, allocating under 10 MB.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.joblist import measure, setup_django  # noqa: E402  (after sys.path)


def sweep_text(runs: int) -> str:
    """A random search of `runs` samples over three ranges, at most 50 at once."""
    return f"""protocolVersion: 2
name: lr-search
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: ubuntu:22.04}}
parameters: {{epochs: 10}}
taskRoles:
  train:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 4, memoryMB: 8192, gpu: 1}}
    commands:
      - python train.py --lr <% $parameters.lr %> --layers <% $parameters.layers %> --opt <% $parameters.opt %>
extras:
  sweep:
    random:
      samples: {runs}
      seed: 1
      parameters:
        lr: {{min: 0.00001, max: 0.1, log: true}}
        layers: {{min: 2, max: 12, integer: true}}
        opt: {{choice: [adam, sgd, adamw]}}
    maxConcurrent: 50
"""


def report_losses(sweep: Any, steps: int = 20) -> int:
    """Every run's loss over `steps` steps (a noisy descent to a floor set by lr, layers and opt),
    stored as the sampler stores it: its points and its MetricSeries. Answers the points made."""
    import math
    import random

    from jobs.models import MetricPoint, MetricSeries, Task

    noise = random.Random(1)
    tasks = dict(Task.objects.filter(job__sweep=sweep).values_list("job_id", "pk"))
    series, points = [], []
    for job in sweep.runs.all():
        values = job.sweep_values
        floor = 0.1 + abs(math.log10(values["lr"]) + 3) * 0.1 + abs(values["layers"] - 6) * 0.02
        floor += {"adam": 0.0, "adamw": 0.02, "sgd": 0.1}[values["opt"]]
        curve = [floor + 2.0 * math.exp(-step / 4) + noise.uniform(0, 0.03) for step in range(steps)]
        points += [
            MetricPoint(job_id=job.pk, task_id=tasks[job.pk], name="loss", step=step, value=value, at=0)
            for step, value in enumerate(curve)
        ]
        series.append(
            MetricSeries(
                job=job,
                name="loss",
                points=steps,
                last_step=steps - 1,
                last_value=curve[-1],
                min_value=min(curve),
                max_value=max(curve),
            )
        )
    MetricPoint.objects.bulk_create(points, batch_size=5000)
    MetricSeries.objects.bulk_create(series, batch_size=1000)
    return len(points)


def cpu_ms(client: Any, path: str, requests: int) -> float:
    """The median CPU time of this process (the server's work and the database's, SQLite being
    in-process) a request of `path` takes: what the wall time is on an idle box."""
    spent = []
    for _ in range(requests):
        began = time.process_time()
        client.get(path)
        spent.append((time.process_time() - began) * 1000)
    return statistics.median(spent)


def too_big_sweeps() -> list[tuple[str, str]]:
    """Configs of a few hundred bytes that ask for far too much."""
    base = sweep_text(1)
    grid = "    grid: {" + ", ".join(f"p{i}: [0,1,2,3,4,5,6,7,8,9]" for i in range(12)) + "}\n"
    long_command = "python train.py " + "x" * 20_000
    return [
        ("10^12-point grid", base.split("    random:")[0] + grid),
        ("10^6 random samples", base.replace("samples: 1", "samples: 1000000")),
        ("array 0-9999 x 100 items", base.split("    random:")[0] + f"    array: '{','.join(['0-9999'] * 100)}'\n"),
        ("10,000 runs of a 20 KB config", sweep_text(10_000).replace("python train.py", long_command)),
    ]


def refusal_rows(user: object, repeats: int = 5) -> list[tuple[str, float, float]]:
    """(what, median ms, peak MB allocated) of each refusal through submit_sweep."""
    import tracemalloc

    from jobs.protocol import JobConfigError
    from jobs.sweeps import submit_sweep

    rows = []
    for label, text in too_big_sweeps():
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            try:
                submit_sweep(user, text)
            except JobConfigError:
                pass
            else:
                raise SystemExit(f"{label}: accepted")
            times.append((time.perf_counter() - began) * 1000)
        tracemalloc.start()
        with contextlib.suppress(JobConfigError):
            submit_sweep(user, text)
        peak = tracemalloc.get_traced_memory()[1] / (1024 * 1024)
        tracemalloc.stop()
        rows.append((label, statistics.median(times), peak))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=60)
    args = parser.parse_args()
    setup_django(fresh=True)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from jobs.sweeps import submit_sweep
    from scheduling.dependencies import judge_held_jobs

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("alice", password="bench-password")
    began, cpu_began = time.perf_counter(), time.process_time()
    sweep = submit_sweep(user, sweep_text(args.runs))
    submit_s, submit_cpu_s = time.perf_counter() - began, time.process_time() - cpu_began
    reported = report_losses(sweep)
    judged = []
    for _ in range(5):
        began = time.perf_counter()
        judge_held_jobs()
        judged.append((time.perf_counter() - began) * 1000)
    client = Client()
    client.force_login(user)
    rows = [
        ("sweep page (compared by loss)", f"/sweeps/{sweep.full_name}/"),
        ("sweep page, sorted by lr", f"/sweeps/{sweep.full_name}/?sort=-lr"),
        ("sweep page, filtered", f"/sweeps/{sweep.full_name}/?state=WAITING&q=opt=adam"),
        ("the charts' points.json", f"/sweeps/{sweep.full_name}/points.json"),
        ("the top 5 curves' curves.json", f"/sweeps/{sweep.full_name}/curves.json"),
        ("API: the sweep and its runs", f"/api/v2/sweeps/{sweep.full_name}"),
        ("sweeps list", "/sweeps/"),
    ]
    print(f"\nsweep of {sweep.runs.count()} runs (random search, maxConcurrent 50), {reported} loss points, SQLite\n")
    print(f"{'what':34} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8} {'CPU ms':>8}")
    print("-" * 62)
    print(f"{'submit (validate, expand, create)':34} {submit_s * 1000:8.0f} {'':>8} {'':>8}")
    print(f"{'  of which CPU (this process)':34} {submit_cpu_s * 1000:8.0f} {'':>8} {'':>8}")
    print(f"{'dependency judge pass (held runs)':34} {statistics.median(judged):8.1f} {max(judged):8.1f} {'':>8}")
    worst = 0.0
    cpu = {}
    for label, path in rows:
        p50, p95, queries = measure(client, path, args.requests)
        worst = max(worst, p95) if label.startswith("sweep page") else worst
        cpu[label] = cpu_ms(client, path, args.requests)
        print(f"{label:34} {p50:8.1f} {p95:8.1f} {queries:8d} {cpu[label]:8.1f}")
    print("-" * 62)
    for label, path in rows[3:5]:
        size = len(client.get(path).content)
        print(f"{label:34} {size / 1024:8.1f} KB")
    print("-" * 62)
    refusals = refusal_rows(user)
    print(f"{'refused (too big)':34} {'p50 ms':>8} {'peak MB':>8}")
    for label, ms, peak in refusals:
        print(f"{label:34} {ms:8.1f} {peak:8.2f}")
    print("-" * 62)
    print(f"submit {submit_s:.2f} s (goal < 5 s): {'OK' if submit_s < 5 else 'OVER'}")
    slowest = max(ms for _, ms, _ in refusals)
    biggest = max(peak for _, _, peak in refusals)
    fine = slowest < 50 and biggest < 10
    said = "OK" if fine else "OVER"
    print(f"refusals: slowest {slowest:.1f} ms, peak {biggest:.2f} MB (goal < 50 ms, < 10 MB): {said}")
    print(f"sweep page worst p95 {worst:.1f} ms (goal < 300 ms): {'OK' if worst < 300 else 'OVER'}")
    busiest = max(ms for label, ms in cpu.items() if label.startswith("sweep page"))
    print(f"sweep page most CPU {busiest:.1f} ms a request (p50 of this process's CPU: a busy box's wait left out)")


if __name__ == "__main__":
    main()
