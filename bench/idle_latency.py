"""How soon a job runs and ends on an idle cluster: `runscheduler` as it runs (its idle wait between
passes), beside `srun true` on a real one-node Slurm in the same run.

    .venv/bin/python bench/idle_latency.py [N] [--skip-slurm] [--interval S] [--json FILE]
    .venv/bin/python bench/idle_latency.py [N] --skip-slurm --elsewhere [--postgres]

N trivial one-task jobs (`true`), one at a time, each submitted once the one before has ended: the
scheduler is idle at every submit, as for a user who submits and waits on a quiet cluster. The
portal: jobs.actions.submit_job in this process, `manage.py runscheduler` in its own (sandboxed
process node, 2 slots); from the job's own times, submit -> its task started (the supervisor's pid
file) and submit -> SUCCEEDED recorded. Slurm: the wall time of `srun true` (submit -> its end
seen by srun), on ../shared/tools/slurm-local.sh (root). Each job follows the one before after
0.1-1 s (at random: a user's next job comes at any moment of the scheduler's idle wait).

--elsewhere: the submits ring no bell on this machine, as from a web process on another machine
than the scheduler's; --postgres: on a fresh PostgreSQL database (127.0.0.1, user postgres), whose
NOTIFY then tells the scheduler (scheduling/notices.py); on SQLite it finds them by its passes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import slurm_local  # noqa: E402
from bench.postgres import own_database  # noqa: E402
from bench.throughput import JOB_TEXT, own_loopback_address, setup_django  # noqa: E402

POLL_S = 0.005  # how often the bench looks whether its job ended (the figures are the job's own times)


def quantiles(values: list[float]) -> tuple[float, float, float]:
    """p50, p95, max in ms."""
    ordered = sorted(values)
    return (
        1000 * statistics.median(ordered),
        1000 * ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        1000 * ordered[-1],
    )


def run_portal(n: int, interval: float | None, elsewhere: bool = False) -> tuple[list[float], list[float]]:
    """(submit -> task started, submit -> SUCCEEDED) in seconds, one per job."""
    setup_django()
    from django.contrib.auth import get_user_model

    if elsewhere:  # (the web on another machine: no socket of the scheduler's there)
        import jobs.wake

        jobs.wake.ring_listeners = lambda directory: None

    from clusters.models import Node
    from jobs.actions import submit_job
    from jobs.models import Job, JobState, Task

    Node.objects.create(name="local", executor="process", cpus=2, memory_mb=2048, address=own_loopback_address())
    user, _ = get_user_model().objects.get_or_create(username="bench")
    command = [sys.executable, str(ROOT / "manage.py"), "runscheduler"]
    if interval is not None:
        command += ["--interval", str(interval)]
    scheduler = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    started, ended = [], []
    try:
        for i in range(-2, n):  # (two first jobs warm the scheduler and the node's supervisor server)
            job = submit_job(user, JOB_TEXT.format(name=f"idle-{i}", command="true"))
            deadline = time.monotonic() + 30
            while Job.objects.filter(pk=job.pk, state=JobState.SUCCEEDED).count() == 0:
                if time.monotonic() > deadline or scheduler.poll() is not None:
                    raise SystemExit(f"portal: job {job.pk} not done in 30 s")
                time.sleep(POLL_S)
            if i < 0:
                continue
            job.refresh_from_db()
            task = Task.objects.get(job=job)
            assert job.completed_at and task.started_at
            started.append((task.started_at - job.created_at).total_seconds())
            ended.append((job.completed_at - job.created_at).total_seconds())
            time.sleep(random.uniform(0.1, 1.0))  # (the scheduler idle again: a user's next job comes any time)
    finally:
        scheduler.send_signal(signal.SIGTERM)
        scheduler.wait(30)
    return started, ended


def run_slurm(n: int) -> tuple[list[float], str]:
    """`srun true` wall times (submit, allocation, the step, its end seen), one job at a time, on a
    Slurm of this run's own. (`sbatch --wait` looks whether its job ended every 2 s at first.)"""
    script = slurm_local.tool()
    if script is None:
        return [], f"{slurm_local.TOOL} not found"
    times = []
    with slurm_local.own_slurm(cpus=2) as env:
        start = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, env=env)
        if start.returncode != 0:
            return [], "slurm-local start failed: " + start.stderr.strip()[-200:]
        for i in range(-2, n):
            t0 = time.perf_counter()
            subprocess.run(
                ["srun", "--quiet", "--ntasks=1", "--mem=512", "true"],
                env=env, check=True, capture_output=True,
            )  # fmt: skip
            if i >= 0:
                times.append(time.perf_counter() - t0)
            time.sleep(random.uniform(0.1, 1.0))
    return times, ""


def main() -> None:
    parser = argparse.ArgumentParser(description="a trivial job on an idle cluster: submit -> started -> done")
    parser.add_argument("n", type=int, nargs="?", default=30)
    parser.add_argument("--skip-slurm", action="store_true", help="the portal alone")
    parser.add_argument(
        "--interval", type=float, help="runscheduler's wait between idle passes (default PAI_SCHEDULER_INTERVAL)"
    )
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--elsewhere", action="store_true", help="submits ring no bell here (the web elsewhere)")
    parser.add_argument("--postgres", action="store_true", help="a fresh PostgreSQL database (127.0.0.1)")
    args = parser.parse_args()
    slurm: list[float] = []
    if args.skip_slurm:
        why = "skipped (--skip-slurm)"
    elif os.geteuid() != 0:
        why = "needs root (slurm-local.sh starts Slurm's daemons)"
    else:
        slurm, why = run_slurm(args.n)
    with own_database("idle_latency") if args.postgres else contextlib.nullcontext():
        started, ended = run_portal(args.n, args.interval, args.elsewhere)

    where = ", submitted from elsewhere" if args.elsewhere else ""
    database = "PostgreSQL" if args.postgres else "SQLite"
    print(
        f"\n{args.n} trivial jobs, one at a time on an idle cluster{where}, {database} (load {os.getloadavg()[0]:.1f})"
    )
    print(f"{'':<44}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}")
    rows = [("PAI Portal: submit -> task started", started), ("PAI Portal: submit -> SUCCEEDED recorded", ended)]
    if slurm:
        rows.append(("Slurm: srun true (submit -> ended)", slurm))
    for label, values in rows:
        p50, p95, most = quantiles(values)
        print(f"{label:<44}{p50:>9.0f}{p95:>9.0f}{most:>9.0f}")
    if why:
        print(f"slurm: {why}")
    if args.json:
        figures = {
            "started_p50_ms": quantiles(started)[0],
            "ended_p50_ms": quantiles(ended)[0],
            "ended_p95_ms": quantiles(ended)[1],
            "slurm_p50_ms": quantiles(slurm)[0] if slurm else None,
        }
        args.json.write_text(json.dumps(figures))


if __name__ == "__main__":
    main()
