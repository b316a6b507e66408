"""The whole scheduler pass at cluster scale, on a real database: history, a deep queue, many nodes.

    .venv/bin/python bench/scheduler_scale.py [--finished 100000] [--waiting 10000] [--nodes 1000] [--postgres]

Fills a fresh database (SQLite, or a fresh PostgreSQL database with --postgres) with `--finished`
finished jobs (one task each), `--waiting` waiting jobs of mixed shapes (1, 2, 4 and 8 GPUs, gangs
of 1-4 tasks) over 10 virtual clusters, and `--nodes` nodes of 8 GPUs each. Then runs the real
`Scheduler.run_once()` pass after pass, with an executor that starts tasks instantly and keeps them
running, until a pass places nothing (the cluster is full or the queue empty), and prints the
pass times (p50 / p95 / max) and the jobs started per second. Goal: pass p95 < 1 s.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.postgres import own_database  # noqa: E402
from clusters.executors.base import Executor, TaskHandle, TaskStatus  # noqa: E402  (Django-free)

VCS = 10
SHAPES = [(1, 1), (1, 2), (2, 4), (1, 8), (4, 1), (2, 2)]  # (tasks, GPUs per task)


def setup(args: argparse.Namespace) -> None:
    var = Path(tempfile.mkdtemp(prefix="pai-bench-scale-"))
    atexit.register(shutil.rmtree, var, ignore_errors=True)  # (its database)
    os.environ.update(PAI_VAR_DIR=str(var), PAI_LOG_LEVEL="WARNING", DJANGO_SETTINGS_MODULE="pai_portal.settings")
    if not args.postgres:  # (else DATABASE_URL, main's own_database)
        os.environ["PAI_SQLITE_PATH"] = str(var / "db.sqlite3")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def spec(name: str, tasks: int, gpus: int, vc: str, command: str = "true") -> dict[str, Any]:
    return {
        "protocolVersion": 2,
        "name": name,
        "type": "job",
        "jobRetryCount": 0,
        "prerequisites": [{"name": "image", "type": "dockerimage", "uri": "pai-portal/base:latest"}],
        "parameters": {},
        "secrets": {},
        "defaults": {"virtualCluster": vc},
        "taskRoles": {
            "worker": {
                "instances": tasks,
                "completion": {"minFailedInstances": 1, "minSucceededInstances": tasks},
                "taskRetryCount": 0,
                "dockerImage": "image",
                "resourcePerInstance": {"cpu": 1, "memoryMB": 1024, "gpu": gpus, "ports": {}},
                "commands": [command],
            }
        },
        "extras": {},
    }


def fill(args: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model

    from clusters.models import Gpu, GpuType, Node, VirtualCluster
    from jobs.models import Job, JobState, Task, TaskState

    VirtualCluster.objects.all().delete()
    vcs = [VirtualCluster.objects.create(name=f"vc{i}", share_percent=100 // VCS) for i in range(VCS)]
    gpu_type = GpuType.objects.create(name="V100")
    nodes = Node.objects.bulk_create(
        Node(name=f"node-{i:04d}", address=f"10.1.{i // 250}.{i % 250 + 1}", cpus=64, memory_mb=512 * 1024)
        for i in range(args.nodes)
    )
    Gpu.objects.bulk_create(Gpu(node=node, index=g, gpu_type=gpu_type) for node in nodes for g in range(8))
    users = [get_user_model().objects.create_user(f"user{i}") for i in range(50)]

    def add_jobs(count: int, state: str, prefix: str) -> None:
        batch = 5000
        for start in range(0, count, batch):
            rows = []
            for i in range(start, min(count, start + batch)):
                tasks, gpus = SHAPES[i % len(SHAPES)] if state == JobState.WAITING else (1, 1)
                vc = vcs[i % VCS]
                rows.append(
                    Job(
                        owner=users[i % len(users)],
                        name=f"{prefix}-{i}",
                        state=state,
                        virtual_cluster=vc,
                        config_text="",
                        spec=spec(f"{prefix}-{i}", tasks, gpus, vc.name),
                        job_attempt=0 if state == JobState.WAITING else 1,
                    )
                )
            jobs = Job.objects.bulk_create(rows)
            task_state = TaskState.WAITING if state == JobState.WAITING else TaskState.SUCCEEDED
            Task.objects.bulk_create(
                Task(job=job, role="worker", index=index, state=task_state)
                for job in jobs
                for index in range(job.spec["taskRoles"]["worker"]["instances"])
            )

    add_jobs(args.finished, JobState.SUCCEEDED, "done")
    add_jobs(args.waiting, JobState.WAITING, "queued")


class InstantExecutor(Executor):
    """Starts every task at once and keeps it running: only the portal's own work is measured."""

    def __init__(self) -> None:
        self.started = 0

    def start(self, launch: Any) -> Any:
        self.started += 1
        return TaskHandle(executor_id=f"fake-{launch.job_id}-{launch.role}-{launch.index}", ip=launch.ip)

    def poll(self, handle: Any) -> Any:
        return TaskStatus(running=True)

    def ping(self) -> None:
        pass

    def list_running(self) -> list[Any]:
        return []

    def stop(self, handle: Any, *, keep: bool = False) -> None:
        pass

    def cleanup_job(self, job_id: int, *, keep: bool = False) -> None:
        pass


def measure() -> dict[str, float]:
    from jobs.models import Job, JobState
    from scheduling import executors, launch, scheduler

    executor = InstantExecutor()
    executors.node_executor = lambda node: executor
    launch.storage.launch_mounts = lambda *args, **kwargs: []  # no per-task directories for 10k jobs
    loop = scheduler.Scheduler(holder="bench")
    times, cpu = [], []
    started_at = time.perf_counter()
    while True:
        before, cpu_before = time.perf_counter(), time.process_time()
        busy = loop.run_once()
        times.append(time.perf_counter() - before)
        cpu.append(time.process_time() - cpu_before)
        if not busy:
            break
    elapsed = time.perf_counter() - started_at
    running = Job.objects.filter(state=JobState.RUNNING).count()
    # The first pass is a cold start (imports, reconcile, specs read once): reported apart.
    first, warm = times[0], sorted(times[1:]) or [times[0]]
    return {
        "passes": len(times),
        "first": first,
        "p50": statistics.median(warm),
        "p95": warm[max(0, math.ceil(0.95 * len(warm)) - 1)],
        # CPU per pass (this process): what a busy machine leaves comparable, unlike the wall time.
        "cpu p50": statistics.median(cpu[1:] or cpu),
        "max": warm[-1],
        "jobs running": running,
        "tasks started": executor.started,
        "jobs/s": running / elapsed,
        "idle pass": idle_pass(loop),
    }


def idle_pass(loop: Any) -> float:
    """A pass when nothing changed (the steady state of a full cluster)."""
    samples = []
    for _ in range(5):
        before = time.perf_counter()
        loop.run_once()
        samples.append(time.perf_counter() - before)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--finished", type=int, default=100_000)
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args()
    with own_database("scale") if args.postgres else contextlib.nullcontext():
        run(args)


def run(args: argparse.Namespace) -> None:
    setup(args)
    fill_start = time.perf_counter()
    fill(args)
    fill_s = time.perf_counter() - fill_start
    result = measure()
    database = "PostgreSQL" if args.postgres else "SQLite"
    print(f"database: {database}; {args.finished} finished jobs, {args.waiting} waiting, {args.nodes} nodes x 8 GPUs")
    print(f"(filled in {fill_s:.0f} s)")
    print(f"{'measure':<24} {'value':>12}")
    print(f"{'passes until full':<24} {result['passes']:>12}")
    print(f"{'first pass (cold start)':<24} {result['first'] * 1000:>10.0f} ms")
    print(f"{'pass p50':<24} {result['p50'] * 1000:>10.0f} ms")
    print(f"{'pass p95':<24} {result['p95'] * 1000:>10.0f} ms")
    print(f"{'pass max':<24} {result['max'] * 1000:>10.0f} ms")
    print(f"{'pass CPU p50':<24} {result['cpu p50'] * 1000:>10.0f} ms")
    print(f"{'idle pass (full)':<24} {result['idle pass'] * 1000:>10.0f} ms")
    print(f"{'jobs running at the end':<24} {result['jobs running']:>12}")
    print(f"{'tasks started':<24} {result['tasks started']:>12}")
    print(f"{'jobs started per second':<24} {result['jobs/s']:>12.0f}")
    print(f"(load average {os.getloadavg()[0]:.1f})")
    print(json.dumps({"goal": "pass p95 < 1 s", "met": result["p95"] < 1.0}))
    if args.json:
        ms = {"p50": "pass_p50_ms", "p95": "pass_p95_ms", "cpu p50": "pass_cpu_p50_ms", "idle pass": "idle_pass_ms"}
        args.json.write_text(json.dumps({key: result[name] * 1000 for name, key in ms.items()}))


if __name__ == "__main__":
    main()
