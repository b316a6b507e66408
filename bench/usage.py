"""The Usage page's numbers over a year of a 1,000-GPU cluster with 500 users: how long the
report's queries take and how much the daily rollups store.

    .venv/bin/python bench/usage.py [--jobs-per-day N]     (default 300 jobs running each day)

A scratch SQLite database gets a year of jobs and their `UsageDay` rows (one per job and day: 500
users, 10 VCs, 3 GPU types, jobs of 1-8 GPUs lasting 1-5 days, every GPU-hour sampled), then times
`scheduling.usage_report.usage_report` (what the page, its CSV's range and `/api/v2/usage` run)
for an admin over the last 30 days and the whole year, and for one user over the year, 10 times
each. Goal: p95 under 200 ms; the stored size is printed (rows, bytes of table and indexes).

Then the sampler's usage passes on top of that year: today 300 jobs ran (one task each, 1-8 GPUs,
a sample a minute since its start), and the passes are timed: the hourly one (today and yesterday
whole), and each period's (scheduling.usage_rollup.roll_up_ended) with nothing ended and with 10
jobs ended since the last. Goal for a period's pass: p95 under 100 ms (1 % of the default 10 s).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from datetime import time as day_time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs-per-day", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pai-bench-usage-") as scratch:
        os.environ.update(PAI_VAR_DIR=scratch, PAI_LOG_LEVEL="WARNING", DJANGO_SETTINGS_MODULE="pai_portal.settings")
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command

        from clusters.models import VirtualCluster
        from jobs.models import Job
        from scheduling.models import UsageDay
        from scheduling.usage_report import usage_report
        from scheduling.usage_rollup import roll_up_month

        call_command("migrate", verbosity=0)
        users = get_user_model().objects
        users.bulk_create([users.model(username=f"user{n:03d}") for n in range(500)])
        people = list(users.all())
        admin = users.create_superuser("root", password="bench-password-1")
        rng = random.Random(7)
        today = date(2026, 11, 26)
        vcs = [VirtualCluster.objects.get_or_create(name=f"vc{n}")[0] for n in range(10)]
        # Jobs of 1-5 days: as many start each day as end, 300 running a day.
        plans: list[dict[str, Any]] = []
        started = time.perf_counter()
        running: list[tuple[dict[str, Any], int]] = []  # (plan, days left)
        for back in range(364, -1, -1):
            running = [(plan, left - 1) for plan, left in running if left > 1]
            while len(running) < args.jobs_per_day:
                plan: dict[str, Any] = {
                    "owner": rng.choice(people),
                    "vc": rng.choice(vcs),
                    "gpus": rng.choice([1, 1, 2, 4, 8]),
                    "kind": rng.choice(["V100", "A100", "H100"]),
                    "days": [],
                }
                plans.append(plan)
                running.append((plan, rng.randint(1, 5)))
            for plan, _ in running:
                plan["days"].append(back)
        jobs = Job.objects.bulk_create(
            [
                Job(owner=p["owner"], name=f"job-{n}", virtual_cluster=p["vc"], spec={}, config_text="")
                for n, p in enumerate(plans)
            ],
            batch_size=5000,
        )
        rows = []
        for job, plan in zip(jobs, plans, strict=True):
            owner, vc, gpus, kind = plan["owner"], plan["vc"], plan["gpus"], plan["kind"]
            for back in plan["days"]:
                held = gpus * rng.randint(3600, 86400)
                rows.append(
                    UsageDay(
                        day=today - timedelta(days=back),
                        job=job,
                        job_name=f"{owner.username}~{job.name}",
                        user=owner,
                        vc_name=vc.name,
                        gpu_type=kind,
                        gpu_seconds=held,
                        gpu_used_seconds=int(held * rng.random()),
                        cpu_seconds=held * 4,
                        cpu_used_seconds=held * 2,
                        memory_mb_seconds=held * 16384,
                    )
                )
        UsageDay.objects.bulk_create(rows, batch_size=5000)
        for back in range(0, 366, 28):  # (every month: what roll_up does for each day it writes)
            roll_up_month(today - timedelta(days=back))
        print(f"{len(jobs):,} jobs, {len(rows):,} rollup rows written in {time.perf_counter() - started:.1f} s")

        def timed(label: str, user: object, is_admin: bool, since: date) -> None:
            times = []
            for _ in range(ROUNDS):
                began = time.perf_counter()
                usage_report(user, is_admin, since, today)
                times.append((time.perf_counter() - began) * 1000)
            p95 = statistics.quantiles(times, n=20)[18]
            verdict = "ok" if p95 < 200 else "MISSED"
            print(f"{label:<28} p50 {statistics.median(times):7.1f} ms  p95 {p95:7.1f} ms  (goal < 200 ms): {verdict}")

        timed("admin, last 30 days", admin, True, today - timedelta(days=29))
        timed("admin, the whole year", admin, True, today - timedelta(days=364))
        timed("one user, the whole year", people[0], False, today - timedelta(days=364))
        database = Path(scratch) / "db.sqlite3"
        with sqlite3.connect(database) as db:
            try:
                size = db.execute(
                    "SELECT SUM(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_master "
                    "WHERE tbl_name IN ('scheduling_usageday', 'scheduling_usagemonth'))"
                ).fetchone()[0]
            except sqlite3.OperationalError:  # (no dbstat in this SQLite build)
                size = database.stat().st_size
        print(f"stored: {len(rows):,} rows, {size / 1e6:.1f} MB with their indexes ({size / len(rows):.0f} B/row)")
        sampler_passes(today, people, vcs, rng)


def sampler_passes(today: date, people: list[Any], vcs: list[Any], rng: random.Random) -> None:
    from jobs.models import Job, Task, TaskAttempt, TaskSample, TaskState
    from scheduling.usage_rollup import last_ended_run, roll_up_ended, roll_up_recent

    now = datetime.combine(today, day_time(18), tzinfo=UTC)
    spec = {"taskRoles": {"worker": {"resourcePerInstance": {"cpu": 4, "memoryMB": 16384, "gpu": 1}}}}
    jobs = Job.objects.bulk_create(
        [
            Job(owner=rng.choice(people), name=f"today-{n}", virtual_cluster=rng.choice(vcs), spec=spec, config_text="")
            for n in range(300)
        ]
    )
    tasks = Task.objects.bulk_create(
        [
            Task(
                job=job,
                role="worker",
                index=0,
                state=TaskState.RUNNING,
                attempt=1,
                gpus=list(range(rng.choice([1, 1, 2, 4, 8]))),
                started_at=now - timedelta(minutes=rng.randint(10, 18 * 60)),
            )
            for job in jobs
        ]
    )
    samples = [
        TaskSample(task=task, at=at, period=60, cpu_milli=2000, memory_mb=8000, gpus=[[i, 50, 1000] for i in task.gpus])
        for task in tasks
        if task.started_at is not None
        for at in range(int(task.started_at.timestamp()), int(now.timestamp()), 60)
    ]
    TaskSample.objects.bulk_create(samples, batch_size=5000)
    print(f"today: {len(tasks)} running jobs, {len(samples):,} samples")

    def timed(label: str, rounds: int, step: Callable[[], object]) -> None:
        times = []
        for _ in range(rounds):
            began = time.perf_counter()
            step()
            times.append((time.perf_counter() - began) * 1000)
        p95 = statistics.quantiles(times, n=20)[18] if len(times) > 1 else times[0]
        print(f"{label:<40} p50 {statistics.median(times):7.1f} ms  p95 {p95:7.1f} ms")

    timed("hourly: today and yesterday whole", 3, lambda: roll_up_recent(now))
    after = last_ended_run()
    timed("a period, nothing ended", 20, lambda: roll_up_ended(after, now))
    running = iter(tasks)
    periods = []

    def ten_end() -> None:
        nonlocal after
        ending = [next(running) for _ in range(10)]
        TaskAttempt.objects.bulk_create(
            [
                TaskAttempt(
                    job_id=t.job_id,
                    job_attempt=1,
                    role="worker",
                    index=0,
                    attempt=1,
                    gpus=t.gpus,
                    started_at=t.started_at,
                    finished_at=now,
                )
                for t in ending
            ]
        )
        Task.objects.filter(pk__in=[t.pk for t in ending]).update(state=TaskState.SUCCEEDED, finished_at=now)
        began = time.perf_counter()
        after = roll_up_ended(after, now)
        periods.append((time.perf_counter() - began) * 1000)

    for _ in range(20):
        ten_end()
    p95 = statistics.quantiles(periods, n=20)[18]
    verdict = "ok" if p95 < 100 else "MISSED"
    print(
        f"{'a period, 10 jobs ended':<40} p50 {statistics.median(periods):7.1f} ms  p95 {p95:7.1f} ms"
        f"  (goal < 100 ms): {verdict}"
    )


if __name__ == "__main__":
    main()
