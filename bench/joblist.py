"""Job list benchmark: 100,000 jobs in a throwaway SQLite DB under var/, the list page timed.

    .venv/bin/python bench/joblist.py [--jobs 100000] [--users 50] [--requests 60]

Prints p50/p95 latency and the query count of `/` for a user and for an admin (who sees all
jobs), with filters, search, a deep page and the live-update endpoint. Goal: p95 < 100 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB_PATH = ROOT / "var" / "bench" / "joblist.sqlite3"
STATES = ["SUCCEEDED"] * 6 + ["FAILED", "STOPPED", "RUNNING", "WAITING"]


def setup_django(fresh: bool) -> None:
    DB_PATH.parent.mkdir(parents=True, exist_ok=True)
    if fresh:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{DB_PATH}{suffix}").unlink(missing_ok=True)
    os.environ["DATABASE_URL"] = f"sqlite:///{DB_PATH}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
    import django

    django.setup()
    from django.test.utils import setup_test_environment

    setup_test_environment()


def fill(job_count: int, user_count: int) -> None:
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from clusters.models import VirtualCluster
    from jobs.models import Job, Task

    call_command("migrate", verbosity=0)
    User = get_user_model()
    if Job.objects.count() >= job_count:
        return
    users = [User(username=f"user{number:03d}") for number in range(user_count)]
    User.objects.bulk_create(users)
    users = list(User.objects.filter(username__startswith="user").order_by("username"))
    User.objects.create_superuser("admin", email="", password="bench-admin-password")
    vcs = [VirtualCluster.objects.get(name="default")] + [
        VirtualCluster.objects.create(name=f"vc{number}", share_percent=10) for number in range(3)
    ]
    spec = {"protocolVersion": 2, "name": "x", "type": "job", "taskRoles": {"worker": {"instances": 1}}}
    start = timezone.now() - timedelta(days=365)
    batch = []
    began = time.perf_counter()
    with transaction.atomic():
        for number in range(job_count):
            created = start + timedelta(seconds=number * 300)
            batch.append(
                Job(
                    owner=users[number % user_count],
                    name=f"job-{number:06d}",
                    state=STATES[number % len(STATES)],
                    virtual_cluster=vcs[number % len(vcs)],
                    config_text="protocolVersion: 2\n",
                    spec=spec,
                    created_at=created,
                    launched_at=created + timedelta(seconds=30),
                )
            )
            if len(batch) == 5000:
                Job.objects.bulk_create(batch)
                batch = []
        Job.objects.bulk_create(batch)
        # One task per job (what the spec says), for the list's sort by tasks.
        task_ids = Job.objects.values_list("pk", flat=True).iterator(chunk_size=5000)
        Task.objects.bulk_create((Task(job_id=pk, role="worker", index=0) for pk in task_ids), batch_size=5000)
    # auto_now_add overrides created_at on insert: spread the times again, 5 minutes apart.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE jobs_job SET created_at = datetime(%s, '+' || (id * 300) || ' seconds')",
            [start.strftime("%Y-%m-%d %H:%M:%S")],
        )
    print(f"filled {job_count} jobs for {user_count} users in {time.perf_counter() - began:.1f} s")


def measure(client, path: str, requests: int) -> tuple[float, float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(path)  # warm caches
    timings = []
    queries = 0
    for _ in range(requests):
        with CaptureQueriesContext(connection) as captured:
            began = time.perf_counter()
            response = client.get(path)
            timings.append((time.perf_counter() - began) * 1000)
        assert response.status_code == 200, (path, response.status_code)
        queries = len(captured.captured_queries)
    timings.sort()
    p95 = timings[min(len(timings) - 1, round(0.95 * (len(timings) - 1)))]
    return statistics.median(timings), p95, queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--keep", action="store_true", help="reuse the DB of the last run when it is full")
    args = parser.parse_args()
    setup_django(fresh=not args.keep)
    fill(args.jobs, args.users)

    from django.contrib.auth import get_user_model
    from django.test import Client

    from jobs.models import Job

    User = get_user_model()
    user_client, admin_client = Client(), Client()
    user_client.force_login(User.objects.get(username="user000"))
    admin_client.force_login(User.objects.get(username="admin"))
    ids = ",".join(str(pk) for pk in Job.objects.order_by("-id").values_list("pk", flat=True)[:20])
    scenarios = [
        ("user: first page (20)", user_client, "/"),
        ("user: 200 per page", user_client, "/?size=200"),
        ("user: state=RUNNING", user_client, "/?state=RUNNING"),
        ("user: search 'job-0001'", user_client, "/?q=job-0001"),
        ("user: page 50", user_client, "/?page=50"),
        ("admin: all jobs, first page", admin_client, "/"),
        ("admin: all jobs, 200 per page", admin_client, "/?size=200"),
        ("admin: vc=vc1 state=FAILED", admin_client, "/?vc=vc1&state=FAILED"),
        ("admin: user=user007", admin_client, "/?user=user007"),
        ("admin: sort by name", admin_client, "/?sort=name"),
        ("admin: sort by name, page 100", admin_client, "/?sort=-name&page=100"),
        ("admin: page 1000", admin_client, "/?page=1000"),
        # Sorts without an index of their own (issue 36: every column sorts): a scan of the rows.
        ("admin: sort by state", admin_client, "/?sort=state"),
        ("admin: sort by GPUs, biggest first", admin_client, "/?sort=-gpus"),
        ("admin: sort by tasks", admin_client, "/?sort=-tasks"),
        ("admin: sort by duration", admin_client, "/?sort=-duration"),
        ("admin: sort by why waiting", admin_client, "/?sort=why"),
        ("user: sort by duration", user_client, "/?sort=-duration"),
        ("user: state=WAITING, sort by why", user_client, "/?state=WAITING&sort=why"),
        ("admin: live states.json", admin_client, f"/jobs/states.json?ids={ids}"),
    ]
    print(f"\n{Job.objects.count()} jobs, {args.requests} requests per row, SQLite at {DB_PATH.relative_to(ROOT)}\n")
    print(f"{'scenario':34} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8}")
    print("-" * 62)
    worst = 0.0
    for label, client, path in scenarios:
        p50, p95, queries = measure(client, path, args.requests)
        worst = max(worst, p95)
        print(f"{label:34} {p50:8.1f} {p95:8.1f} {queries:8d}")
    print("-" * 62)
    print(f"worst p95: {worst:.1f} ms (goal < 100 ms): {'OK' if worst < 100 else 'OVER'}")


if __name__ == "__main__":
    main()
