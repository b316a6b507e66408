"""What resource sampling and training metrics cost: the scheduler's pass with 200 running tasks,
without and with the sampler beside it, and the stored size of a day of samples of 200 tasks; with
--training, the pass with 50 tasks printing 1,000 `PAI_METRIC` points/s in all, without and with the
sampler's metrics reader beside it, and the job page of a job holding 100,000 points.

    .venv/bin/python bench/metrics.py [TASKS] [--no-storage]      (default 200 tasks)
    .venv/bin/python bench/metrics.py --training [TASKS] [--no-page]   (default 50 tasks; issue 47)

Pass cost: TASKS real tasks (`sleep`) run on the process executor (20 jobs); the scheduler's
passes then run back to back, in windows of the default sampling period (PAI_SAMPLE_SECONDS),
interleaved: no sampling, one sampling round per window (what `runsampler` does), and rounds back
to back (the worst case); the sampling runs in processes of its own, as `runsampler` does.
Storage: a day of raw samples (one per task per period) written into the real table of a fresh
SQLite file, then the file's size after VACUUM; CPU-only tasks, and tasks holding 4 GPUs each.
Training metrics (--training): TASKS tasks (10 jobs) each print a `PAI_METRIC` line of two metrics
every 0.1 s (20 points/s a task: 1,000 points/s for 50); the passes run as above, the cases being the
metrics reader (`MetricReader.read`, the sampler's "training metrics" duty) off, once per window, back
to back. A round once per window reads what was printed since its last window (about three windows'
worth, interleaved): more than a steady sampler reads. The job page: a job whose one task printed
100,000 points (4 metrics x 25,000 steps, read by the same reader from its log), its page, its plot's
data (`metrics.json`, downsampled) and its CSV (every point), each timed in-process (Django's test
client) as bench/joblist.py does.
Throwaway databases under a temp directory.
"""

import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scheduler_scale import spec  # noqa: E402  (one job spec for the benches)

ROUNDS = 5
CASES = ("sampler off", "one sampling round per period (default)", "sampling back to back (worst case)")
TRAINING_CASES = ("metrics reader off", "one read per period (default)", "reads back to back (worst case)")
JOBS = 20
DAY_S = 24 * 3600
# 20 points/s: a line of two metrics every 0.1 s, until stopped.
PRINTS_METRICS = (
    "python3 -c 'import time\nfor step in range(10**9):\n"
    '    line = "PAI_METRIC {\\"step\\": %d, \\"loss\\": %f, \\"acc\\": %f}" % (step, 1 / (step + 1), step % 7)\n'
    "    print(line, flush=True)\n    time.sleep(0.1)'"
)
PAGE_STEPS, PAGE_METRICS = 25_000, ("loss", "acc", "lr", "grad_norm")  # 100,000 points


def setup_django() -> Path:
    var = Path(tempfile.mkdtemp(prefix="pai-bench-metrics-"))
    os.environ.update(PAI_VAR_DIR=str(var), PAI_SQLITE_PATH=str(var / "db.sqlite3"), PAI_LOG_LEVEL="WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return var


def start_tasks(tasks: int, command: str = "sleep 3600", jobs: int = JOBS) -> Any:
    from django.contrib.auth import get_user_model

    from clusters.models import Node
    from jobs.actions import submit_job
    from jobs.models import Task, TaskState
    from scheduling.scheduler import Scheduler

    Node.objects.create(name="local", executor="process", cpus=tasks, memory_mb=tasks * 256)
    user = get_user_model().objects.get_or_create(username="bench")[0]
    per_job = tasks // jobs
    for i in range(jobs):
        body = spec(f"bench-{i}", per_job, 0, "default", command)
        body["taskRoles"]["worker"]["resourcePerInstance"]["memoryMB"] = 128
        submit_job(user, json.dumps(body))  # (JSON is YAML)
    scheduler = Scheduler()
    while Task.objects.filter(state=TaskState.RUNNING).count() < per_job * jobs:
        scheduler.run_once()
    return scheduler


def pass_times(scheduler: Any, period: float, work: str = "sample") -> dict[str, list[float]]:
    """Scheduler passes back to back for ROUNDS x three windows of `period` seconds, interleaved
    so that the box's other load falls on every case alike: no sampling; one sampling round per
    window (the default period: what `runsampler` does); rounds back to back (worst case). The
    sampling (`work`: resources, or training metrics) runs in processes of its own, as
    `runsampler` does, resumed only in their windows."""
    cases = TRAINING_CASES if work == "metrics" else CASES
    samplers = {
        cases[1]: _sampler_process(back_to_back=False, work=work),
        cases[2]: _sampler_process(back_to_back=True, work=work),
    }
    times: dict[str, list[float]] = {case: [] for case in cases}
    try:
        for process in samplers.values():  # started (Django set up, the signals caught) before measuring
            assert process.stdout is not None and process.stdout.readline() == b"ready\n"
        for round_number in range(ROUNDS):
            # A new order each round: what the passes just before left behind falls on every case.
            for case in random.Random(round_number).sample(cases, len(cases)):
                if case in samplers:
                    samplers[case].send_signal(signal.SIGUSR2)
                deadline = time.monotonic() + period
                while time.monotonic() < deadline:
                    t0 = time.perf_counter()
                    scheduler.run_once()
                    times[case].append(time.perf_counter() - t0)
                if case in samplers:
                    samplers[case].send_signal(signal.SIGUSR1)
                time.sleep(0.5)  # a round under way ends
    finally:
        for process in samplers.values():
            process.kill()
    return times


def _sampler_process(*, back_to_back: bool, work: str) -> subprocess.Popen[bytes]:
    how = "back-to-back" if back_to_back else "once"
    return subprocess.Popen([sys.executable, __file__, "--sample-loop", how, work], stdout=subprocess.PIPE)


def sample_loop(back_to_back: bool, work: str) -> None:
    """(In a child process.) While resumed (SIGUSR2): one sampling round (the window is the
    period), or rounds back to back; none while paused (SIGUSR1), and a pause never lands inside
    a round's database write. `work`: the resources' sampling, or the training metrics' reading."""
    import django

    django.setup()
    from scheduling.sampler import Sampler
    from scheduling.training_metrics import MetricReader

    do_round = MetricReader().read if work == "metrics" else Sampler().sample_once
    resumed = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: resumed.clear())
    signal.signal(signal.SIGUSR2, lambda *_: resumed.set())
    print("ready", flush=True)
    while True:
        resumed.wait()
        do_round()
        while resumed.is_set() and not back_to_back:
            signal.pause()  # asleep until the next signal: no wakeups that would steal the box's CPUs


def passes_beside(
    scheduler: Any, period: float, one_round: Any, work: str
) -> tuple[dict[str, list[float]], float, int]:
    """One round timed alone (seconds, what it stored), then pass_times; every task killed after."""
    try:
        round_t0 = time.perf_counter()
        stored = one_round()
        round_s = time.perf_counter() - round_t0
        return pass_times(scheduler, period, work), round_s, stored
    finally:
        stop_all(scheduler)


def stop_all(scheduler: Any) -> None:
    """Kill every task's supervisor's process group at once (the scheduler's stops would take
    minutes); the sandbox dies with its parent. (The pid file says "pid start-time": read as one
    int it killed nothing, and the tasks outlived the bench.)"""
    from django.conf import settings

    from clusters.executors.supervise import recorded_process
    from jobs.models import Task

    scheduler.release_lease()
    root = Path(settings.PAI_WORK_ROOT) / "process"
    for executor_id in Task.objects.exclude(executor_id="").values_list("executor_id", flat=True):
        if pid := recorded_process(root / executor_id / "pid"):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)


def storage_bytes(var: Path, tasks: int, period: float, gpus: int) -> int:
    """The SQLite file's size once a day of raw samples of `tasks` tasks is written, less its
    size without them."""
    import sqlite3

    from django.db import connection

    path = var / f"storage-{gpus}.sqlite3"
    table = "jobs_tasksample"
    schema = [
        sql
        for (sql,) in connection.cursor().execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = %s AND sql IS NOT NULL", [table]
        )
    ]
    db = sqlite3.connect(path)
    for sql in schema:
        db.execute(sql.replace('REFERENCES "jobs_task" ("id") DEFERRABLE INITIALLY DEFERRED', ""))
    db.commit()
    db.execute("VACUUM")
    empty = path.stat().st_size
    rng = random.Random(1)
    start = int(time.time()) - DAY_S
    per_task = int(DAY_S / period)

    def rows() -> Iterator[tuple[Any, ...]]:
        for step in range(per_task):
            at = start + int(step * period)
            for task in range(1, tasks + 1):
                gpu = (
                    "[" + ", ".join(f"[{i}, {rng.randint(0, 100)}, {rng.randint(0, 16000)}]" for i in range(gpus)) + "]"
                    if gpus
                    else None
                )
                yield (
                    task,
                    at,
                    0,
                    rng.randint(0, 4000),
                    rng.randint(100, 30000),
                    32768,
                    rng.randint(0, 5000),
                    rng.randint(0, 5000),
                    rng.randint(0, 20000),
                    rng.randint(0, 20000),
                    gpu,
                )

    db.executemany(
        "INSERT INTO jobs_tasksample (task_id, at, period, cpu_milli, memory_mb, memory_limit_mb, net_rx_kbps, "
        "net_tx_kbps, disk_read_kbps, disk_write_kbps, gpus) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows(),
    )
    db.commit()
    db.execute("VACUUM")
    db.close()
    return path.stat().st_size - empty


def page_times(requests: int) -> list[tuple[str, float, float, int]]:
    """A job whose one task printed 100,000 points, stored by the sampler's own reader from its log:
    (what, p50 ms, p95 ms, queries) of its page, its plot's data and its whole CSV."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import setup_test_environment

    from bench.joblist import measure
    from jobs.actions import submit_job
    from jobs.models import Job, JobState, MetricPoint
    from scheduling.training_metrics import Run, read_runs

    setup_test_environment()  # (the test client's host)
    user = get_user_model().objects.get_or_create(username="bench")[0]
    job = submit_job(user, json.dumps(spec("hundred-thousand", 1, 0, "default")))
    task = job.tasks.get()
    log = Path(tempfile.mkdtemp(prefix="pai-bench-page-")) / "worker-0.log"
    with open(log.with_suffix(".stdout.log"), "w") as out:
        for step in range(PAGE_STEPS):
            values = {name: 1 / (step + 1) + i for i, name in enumerate(PAGE_METRICS)}
            out.write("PAI_METRIC " + json.dumps({"step": step, **values}) + "\n")
    run = Run(task.pk, job.pk, task.role, task.index, str(log))
    while read_runs([run], time.time()):  # (a read takes at most READ_BYTES of the log)
        pass
    Job.objects.filter(pk=job.pk).update(state=JobState.SUCCEEDED)
    assert MetricPoint.objects.filter(job=job).count() == PAGE_STEPS * len(PAGE_METRICS)
    client = Client()
    client.force_login(user)
    base = f"/jobs/{job.full_name}/"
    rows = [(what, *measure(client, base + path, requests)) for what, path in (("page", ""), ("plot", "metrics.json"))]
    csv_ms = []
    for _ in range(max(3, requests // 10)):
        began = time.perf_counter()
        response: Any = client.get(base + "metrics.csv")
        lines = b"".join(response.streaming_content).count(b"\n")
        csv_ms.append((time.perf_counter() - began) * 1000)
    assert lines == PAGE_STEPS * len(PAGE_METRICS) + 1, lines
    return [*rows, ("CSV, every point", statistics.median(csv_ms), max(csv_ms), 0)]


def print_passes(times: dict[str, list[float]], what: str, period: float, first_round: str) -> None:
    print(f"\n{what}; scheduler passes back to back,")
    print(f"{ROUNDS} windows of {period:g} s per case, interleaved")
    print(f"{first_round}\n")
    base = statistics.fmean(next(iter(times.values())))  # (the first case: off)
    print(f"| {'case':40} | passes | mean pass | median | p95 | mean vs off |")
    print(f"|{'-' * 42}|--------|-----------|--------|-----|-------------|")
    for case, values in times.items():
        mean = statistics.fmean(values)
        print(
            f"| {case:40} | {len(values):6} | {mean * 1000:6.1f} ms | {statistics.median(values) * 1000:4.1f} ms "
            f"| {statistics.quantiles(values, n=20)[-1] * 1000:5.1f} ms | {100 * (mean - base) / base:+5.1f}% |"
        )


def training(tasks: int) -> None:
    """--training: the pass with `tasks` tasks printing metrics, reader off / on; the job page."""
    setup_django()
    from django.conf import settings

    from jobs.models import MetricPoint
    from scheduling.training_metrics import MetricReader

    period = settings.PAI_SAMPLE_SECONDS
    scheduler = start_tasks(tasks, PRINTS_METRICS, jobs=10)
    time.sleep(period)
    began, points0 = time.monotonic(), MetricPoint.objects.count()
    times, round_s, stored = passes_beside(scheduler, period, MetricReader().read, "metrics")
    rate = (MetricPoint.objects.count() - points0 - stored) / (time.monotonic() - began - round_s)
    what = f"{tasks} running tasks printing PAI_METRIC lines (process executor), {rate:,.0f} points/s stored"
    print_passes(times, what, period, f"one read of the first {period:g} s: {round_s * 1000:.0f} ms, {stored:,} points")
    if "--no-page" in sys.argv:
        return
    points = f"{PAGE_STEPS * len(PAGE_METRICS):,} points ({len(PAGE_METRICS)} metrics x {PAGE_STEPS:,} steps)"
    print(f"\na job of {points}: its page, its plot's data (downsampled), its CSV; in-process\n")
    print("| request | p50 | p95 (CSV: max) | queries |")
    print("|---|---|---|---|")
    for what, p50, p95, queries in page_times(requests=30):
        print(f"| {what} | {p50:.0f} ms | {p95:.0f} ms | {queries or ''} |")


def main() -> None:
    if sys.argv[1:2] == ["--sample-loop"]:
        sample_loop(sys.argv[2] == "back-to-back", sys.argv[3])
        return
    numbers = [arg for arg in sys.argv[1:] if arg.isdigit()]
    if "--training" in sys.argv:
        training(int(numbers[0]) if numbers else 50)
        return
    tasks = int(numbers[0]) if numbers else 200
    var = setup_django()
    from django.conf import settings

    from scheduling.sampler import Sampler

    default_period = settings.PAI_SAMPLE_SECONDS
    scheduler = start_tasks(tasks)
    times, round_s, stored = passes_beside(scheduler, default_period, Sampler().sample_once, "sample")
    said = f"one sampling round: {round_s * 1000:.0f} ms, {stored} samples stored"
    print_passes(times, f"{tasks} running tasks (process executor)", default_period, said)
    if "--no-storage" in sys.argv:
        return
    print(f"\nstored size of 24 h of raw samples, {tasks} tasks, one per {default_period:g} s (SQLite, after VACUUM)\n")
    print("| tasks hold | rows | size | bytes/row |")
    print("|------------|------|------|-----------|")
    rows = tasks * int(DAY_S / default_period)
    for gpus in (0, 4):
        size = storage_bytes(var, tasks, default_period, gpus)
        print(f"| {gpus} GPUs | {rows:,} | {size / 1e6:.0f} MB | {size / rows:.0f} |")


if __name__ == "__main__":
    main()
