"""The Usage page's numbers over a year of a 1,000-GPU cluster with 500 users: how long the
report's queries take and how much the daily rollups store.

    .venv/bin/python bench/usage.py [--jobs-per-day N]     (default 300 jobs running each day)

A scratch SQLite database gets a year of `UsageDay` rows (one per job and day: 500 users, 10 VCs,
3 GPU types, jobs of 1-8 GPUs lasting 1-5 days, every GPU-hour sampled), then times
`scheduling.usage_report.usage_report` (what the page, its CSV's range and `/api/v2/usage` run)
for an admin over the last 30 days and the whole year, and for one user over the year, 10 times
each. Goal: p95 under 200 ms; the stored size is printed (rows, bytes of table and indexes).
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
from datetime import date, timedelta
from pathlib import Path

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

        from scheduling.models import UsageDay
        from scheduling.usage_report import usage_report

        call_command("migrate", verbosity=0)
        users = get_user_model().objects
        users.bulk_create([users.model(username=f"user{n:03d}") for n in range(500)])
        people = list(users.all())
        admin = users.create_superuser("root", password="bench-password-1")
        rng = random.Random(7)
        today = date(2026, 11, 26)
        rows, started = [], time.perf_counter()
        for back in range(365):
            day = today - timedelta(days=back)
            for n in range(args.jobs_per_day):
                owner = rng.choice(people)
                gpus = rng.choice([1, 1, 2, 4, 8])
                held = gpus * rng.randint(3600, 86400)
                rows.append(
                    UsageDay(
                        day=day,
                        job_name=f"{owner.username}~job-{back}-{n}",
                        user=owner,
                        vc_name=f"vc{rng.randrange(10)}",
                        gpu_type=rng.choice(["V100", "A100", "H100"]),
                        gpu_seconds=held,
                        gpu_used_seconds=int(held * rng.random()),
                        cpu_seconds=held * 4,
                        cpu_used_seconds=held * 2,
                        memory_mb_seconds=held * 16384,
                    )
                )
        UsageDay.objects.bulk_create(rows, batch_size=5000)
        print(f"{len(rows):,} rollup rows written in {time.perf_counter() - started:.1f} s")

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
                    "SELECT SUM(pgsize) FROM dbstat WHERE name IN "
                    "(SELECT name FROM sqlite_master WHERE tbl_name = 'scheduling_usageday')"
                ).fetchone()[0]
            except sqlite3.OperationalError:  # (no dbstat in this SQLite build)
                size = database.stat().st_size
        print(f"stored: {len(rows):,} rows, {size / 1e6:.1f} MB with their indexes ({size / len(rows):.0f} B/row)")


if __name__ == "__main__":
    main()
