"""What resource sampling costs: the scheduler's pass with 200 running tasks, without and with the
sampler thread beside it, and the stored size of a day of samples of 200 tasks.

    .venv/bin/python bench/metrics.py [TASKS] [--no-storage]      (default 200 tasks)

Pass cost: TASKS real tasks (`sleep`) run on the process executor (20 jobs); the scheduler's
passes then run back to back, in windows of the default sampling period (PAI_SAMPLE_SECONDS),
interleaved: no sampling, one sampling round per window (what `runsampler` does), and rounds back
to back (the worst case); the sampling runs in processes of its own, as `runsampler` does.
Storage: a day of raw samples (one per task per period) written into the real table of a fresh
SQLite file, then the file's size after VACUUM; CPU-only tasks, and tasks holding 4 GPUs each.
Throwaway databases under a temp directory.
"""

import contextlib
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
ROUNDS = 5
CASES = ("sampler off", "one sampling round per period (default)", "sampling back to back (worst case)")
JOBS = 20
DAY_S = 24 * 3600


def setup_django() -> Path:
    var = Path(tempfile.mkdtemp(prefix="pai-bench-metrics-"))
    os.environ.update(PAI_VAR_DIR=str(var), PAI_SQLITE_PATH=str(var / "db.sqlite3"), PAI_LOG_LEVEL="WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return var


def start_tasks(tasks: int) -> Any:
    from django.contrib.auth import get_user_model

    from clusters.models import Node
    from jobs.actions import submit_job
    from jobs.models import Task, TaskState
    from scheduling.scheduler import Scheduler

    Node.objects.create(name="local", executor="process", cpus=tasks, memory_mb=tasks * 256)
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    per_job = tasks // JOBS
    text = (
        "protocolVersion: 2\nname: {name}\ntype: job\n"
        "prerequisites:\n  - {{name: image, type: dockerimage, uri: pai-portal/base:latest}}\n"
        f"taskRoles:\n  main:\n    instances: {per_job}\n    dockerImage: image\n"
        "    resourcePerInstance: {{cpu: 1, memoryMB: 128, gpu: 0}}\n    commands: ['sleep 3600']\n"
    )
    for i in range(JOBS):
        submit_job(user, text.format(name=f"bench-{i}"))
    scheduler = Scheduler()
    while Task.objects.filter(state=TaskState.RUNNING).count() < per_job * JOBS:
        scheduler.run_once()
    return scheduler


def pass_times(scheduler: Any, period: float) -> dict[str, list[float]]:
    """Scheduler passes back to back for ROUNDS x three windows of `period` seconds, interleaved
    so that the box's other load falls on every case alike: no sampling; one sampling round per
    window (the default period: what `runsampler` does); rounds back to back (worst case). The
    sampling runs in processes of its own, as `runsampler` does, resumed only in their windows."""
    samplers = {
        CASES[1]: _sampler_process(back_to_back=False),
        CASES[2]: _sampler_process(back_to_back=True),
    }
    times: dict[str, list[float]] = {case: [] for case in CASES}
    try:
        time.sleep(5)  # let them start (Django setup) before measuring
        for round_number in range(ROUNDS):
            # A new order each round: what the passes just before left behind falls on every case.
            for case in random.Random(round_number).sample(CASES, len(CASES)):
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


def _sampler_process(*, back_to_back: bool) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, __file__, "--sample-loop", "back-to-back" if back_to_back else "once"])


def sample_loop(back_to_back: bool) -> None:
    """(In a child process.) While resumed (SIGUSR2): one sampling round (the window is the
    period), or rounds back to back; none while paused (SIGUSR1), and a pause never lands inside
    a round's database write."""
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from scheduling.sampler import Sampler

    sampler = Sampler()
    resumed = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: resumed.clear())
    signal.signal(signal.SIGUSR2, lambda *_: resumed.set())
    while True:
        resumed.wait()
        sampler.sample_once()
        while resumed.is_set() and not back_to_back:
            signal.pause()  # asleep until the next signal: no wakeups that would steal the box's CPUs


def stop_all(scheduler: Any) -> None:
    """Kill every task's process group at once (the scheduler's stops would take minutes)."""
    from django.conf import settings

    from jobs.models import Task

    scheduler.release_lease()
    root = Path(settings.PAI_WORK_ROOT) / "process"
    for executor_id in Task.objects.exclude(executor_id="").values_list("executor_id", flat=True):
        with contextlib.suppress(OSError, ValueError):
            os.killpg(int((root / executor_id / "pid").read_text()), signal.SIGKILL)


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


def main() -> None:
    if sys.argv[1:2] == ["--sample-loop"]:
        sample_loop(sys.argv[2] == "back-to-back")
        return
    numbers = [arg for arg in sys.argv[1:] if arg.isdigit()]
    tasks = int(numbers[0]) if numbers else 200
    var = setup_django()
    from django.conf import settings

    from scheduling.sampler import Sampler

    default_period = settings.PAI_SAMPLE_SECONDS
    scheduler = start_tasks(tasks)
    try:
        round_t0 = time.perf_counter()
        stored = Sampler().sample_once()
        round_s = time.perf_counter() - round_t0
        times = pass_times(scheduler, default_period)
    finally:
        stop_all(scheduler)
    base = statistics.fmean(times[CASES[0]])
    print(f"\n{tasks} running tasks (process executor); scheduler passes back to back,")
    print(f"{ROUNDS} windows of {default_period:g} s per case, interleaved")
    print(f"one sampling round: {round_s * 1000:.0f} ms, {stored} samples stored\n")
    print(f"| {'case':40} | passes | mean pass | median | p95 | mean vs off |")
    print(f"|{'-' * 42}|--------|-----------|--------|-----|-------------|")
    for case, values in times.items():
        mean = statistics.fmean(values)
        print(
            f"| {case:40} | {len(values):6} | {mean * 1000:6.1f} ms | {statistics.median(values) * 1000:4.1f} ms "
            f"| {statistics.quantiles(values, n=20)[-1] * 1000:5.1f} ms | {100 * (mean - base) / base:+5.1f}% |"
        )
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
