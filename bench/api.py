"""REST API benchmark: the portal served as in production, N concurrent clients.

    .venv/bin/python bench/api.py [--clients 8] [--workers 2] [--submits 2000] [--list-jobs 10000]

What it does (the serving part is bench/served.py, shared with bench/load.py):
- a throwaway state directory var/bench-api-<pid>/, migrated, with a user holding a token, and a
  second user owning --list-jobs jobs;
- the server as production runs it (`manage.py serve`, granian, --workers processes), or
  `--server daphne` (what production ran before), `--app django-asgi` (Django's own ASGI handler
  instead of a2wsgi, with daphne) for comparison;
- --clients threads with keep-alive HTTP connections measure: submits/second (distinct YAML
  jobs to POST /api/v2/jobs), detail GET p50/p95, list GET p95 over the 10,000 jobs;
- beside them, Slurm's sbatch submit rate from ../shared/tools/slurm-local.sh bench N.
Throttles are raised for the run (they are per user and would otherwise cap the rate). Each phase
also gives the server's CPU per request (its processes' user + system time, bench/cpu.py): the
figure a busy machine leaves comparable. --json FILE writes the figures.

`--threads` is PAI_HTTP_THREADS, request threads per worker: with SQLite few beat many, as
threads of one process otherwise wait on each other's write lock through SQLite's sleeping busy
handler.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import slurm_local
from bench.cpu import process_cpu
from bench.served import APPS, JOB_YAML, ROOT, Client, percentile, prepare, served, served_env


def prepare_database(list_jobs: int) -> None:
    """Runs inside a child process with the bench environment: users, tokens, the listed jobs."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from accounts.tokens import issue_token
    from clusters.models import VirtualCluster
    from jobs.actions import submit_job
    from jobs.models import Job, Task

    User = get_user_model()
    submitter = User.objects.create_user("bench", password="bench-password-1")
    lister = User.objects.create_user("lister", password="lister-password-1")
    template = submit_job(lister, JOB_YAML.format(name="template"))  # one real submit: a real spec
    vc = VirtualCluster.objects.get(name="default")
    with transaction.atomic():
        for start in range(1, list_jobs, 1000):
            jobs = Job.objects.bulk_create(
                Job(
                    owner=lister,
                    name=f"listed-{number}",
                    virtual_cluster=vc,
                    config_text=template.config_text,
                    spec=template.spec,
                )
                for number in range(start, min(start + 1000, list_jobs))
            )
            Task.objects.bulk_create(Task(job=job, role="worker", index=0) for job in jobs)
    detail_job = submit_job(submitter, JOB_YAML.format(name="detail-target"))
    print(
        json.dumps(
            {
                "submitter": issue_token(submitter)[0],
                "lister": issue_token(lister)[0],
                "detail": detail_job.full_name,
            }
        )
    )


def run_clients(
    clients: int, total: int, port: int, token: str, make: Callable[[int], tuple[str, str, str | None, str]]
) -> tuple[float, list[float], dict[int, int]]:
    """`total` requests spread over `clients` threads; returns (wall seconds, latencies, statuses)."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    counter = iter(range(total))
    counter_lock = threading.Lock()

    def worker() -> None:
        client = Client(port, token)
        while True:
            with counter_lock:
                number = next(counter, None)
            if number is None:
                return
            method, path, body, content_type = make(number)
            status, seconds = client.request(method, path, body, content_type)
            with lock:
                latencies.append(seconds)
                statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - began, latencies, statuses


def slurm_submit_rate(jobs: int) -> tuple[str, str]:
    """(jobs/s or "n/a", note) from slurm-local.sh bench, on a Slurm of this run's own (its own
    state directory and ports: bench.slurm_local), stopped after."""
    script = slurm_local.tool()
    if script is None:
        return "n/a", f"{slurm_local.TOOL} not found"
    try:
        with slurm_local.own_slurm() as env:
            started = subprocess.run(
                ["bash", str(script), "start"], capture_output=True, text=True, timeout=600, env=env
            )
            if started.returncode != 0:
                return "n/a", "slurm-local.sh start failed: " + (started.stderr or started.stdout).strip()[-300:]
            result = subprocess.run(
                ["bash", str(script), "bench", str(jobs)],
                capture_output=True,
                text=True,
                timeout=300 + 4 * jobs,
                env=env,
            )
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as error:
        return "n/a", f"slurm-local.sh: {error}"
    found = re.search(r"submit ([0-9.]+) jobs/s", result.stdout)
    if result.returncode != 0 or not found:
        return "n/a", "slurm-local.sh bench failed: " + (result.stderr or result.stdout).strip()[-300:]
    return found.group(1), result.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="server processes")
    parser.add_argument("--server", choices=["granian", "daphne"], default="granian")
    parser.add_argument("--submits", type=int, default=2000)
    parser.add_argument("--details", type=int, default=2000)
    parser.add_argument("--lists", type=int, default=300)
    parser.add_argument("--big-lists", type=int, default=150, help="GETs of limit=1000 (a p95 of 60 was noise)")
    parser.add_argument("--list-jobs", type=int, default=10000)
    parser.add_argument("--slurm-jobs", type=int, default=200)
    parser.add_argument("--app", choices=sorted(APPS), default="production")
    parser.add_argument("--threads", type=int, default=4, help="PAI_HTTP_THREADS: request threads per worker")
    parser.add_argument("--skip-slurm", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep var/bench-api-<pid>/ afterwards")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--prepare-database", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare_database is not None:
        prepare_database(args.prepare_database)
        return

    var_dir = ROOT / "var" / f"bench-api-{os.getpid()}"
    var_dir.mkdir(parents=True)
    env = served_env(
        var_dir,
        PAI_HTTP_THREADS=str(args.threads),
        PAI_API_SUBMIT_RATE="100000000/min",
        PAI_API_LIST_RATE="100000000/min",
    )
    print(f"state in {var_dir}; migrating and preparing {args.list_jobs} jobs ...", flush=True)
    tokens = prepare(__file__, env, str(args.list_jobs))
    cpu_ms: dict[str, float] = {}
    client_cpu_ms: dict[str, float] = {}  # the clients' own (this process's), on the same CPUs
    with served(var_dir, env, workers=args.workers, server=args.server, app=args.app) as (port, servers):
        print(f"{args.server} x{args.workers} on 127.0.0.1:{port}, {args.clients} clients", flush=True)

        def phase(name: str, count: int, token: str, make: Callable[[int], tuple[str, str, str | None, str]]) -> Any:
            before, client_before = process_cpu(servers), time.process_time()
            measured = run_clients(args.clients, count, port, token, make)
            cpu_ms[name] = 1000 * (process_cpu(servers) - before) / count
            client_cpu_ms[name] = 1000 * (time.process_time() - client_before) / count
            return measured

        def submit(number: int) -> tuple[str, str, str | None, str]:
            return "POST", "/api/v2/jobs", JOB_YAML.format(name=f"bench-{number}"), "text/yaml"

        submit_wall, submit_lat, submit_status = phase("submit", args.submits, tokens["submitter"], submit)
        detail_path = f"/api/v2/jobs/{tokens['detail']}"
        _, detail_lat, detail_status = phase(
            "detail", args.details, tokens["submitter"], lambda _: ("GET", detail_path, None, "")
        )
        page_path = "/api/v2/jobs?limit=20&withTotalCount=true"
        _, page_lat, page_status = phase("list20", args.lists, tokens["lister"], lambda _: ("GET", page_path, None, ""))
        big_path = "/api/v2/jobs?limit=1000"
        _, big_lat, big_status = phase(
            "list1000", args.big_lists, tokens["lister"], lambda _: ("GET", big_path, None, "")
        )

    slurm_rate, slurm_note = (
        ("n/a", "skipped (--skip-slurm)") if args.skip_slurm else slurm_submit_rate(args.slurm_jobs)
    )
    rate = args.submits / submit_wall
    ms = 1000.0
    rows = [
        ("submits/second (POST /api/v2/jobs)", f"{rate:.0f}/s", f"statuses {submit_status}"),
        ("Slurm sbatch submits/second", f"{slurm_rate}/s" if slurm_rate != "n/a" else "n/a", slurm_note),
        ("detail GET p50", f"{statistics.median(detail_lat) * ms:.1f} ms", f"statuses {detail_status}"),
        ("detail GET p95", f"{percentile(detail_lat, 0.95) * ms:.1f} ms", "aim < 20 ms"),
        (
            f"list GET p95, {args.list_jobs} jobs, limit=20+total",
            f"{percentile(page_lat, 0.95) * ms:.1f} ms",
            f"p50 {statistics.median(page_lat) * ms:.1f} ms, statuses {page_status}",
        ),
        (
            f"list GET p95, {args.list_jobs} jobs, limit=1000",
            f"{percentile(big_lat, 0.95) * ms:.1f} ms",
            f"p50 {statistics.median(big_lat) * ms:.1f} ms, statuses {big_status}",
        ),
        (
            "submit latency p50 / p95",
            f"{statistics.median(submit_lat) * ms:.1f} / {percentile(submit_lat, 0.95) * ms:.1f} ms",
            "",
        ),
    ]
    if slurm_rate != "n/a":
        rows.append(("submit rate vs Slurm", f"{rate / float(slurm_rate):.2f}x", "aim >= 3x"))
    for name, label in (("submit", "a submit"), ("detail", "a detail GET"), ("list1000", "a 1000-row list")):
        rows.append((f"server CPU per {label}", f"{cpu_ms[name]:.2f} ms", "user + system, all server processes"))
    rows.append(("clients' CPU per submit", f"{client_cpu_ms['submit']:.2f} ms", "this process's, beside the server"))
    width = max(len(row[0]) for row in rows)
    print(f"\n(load average {os.getloadavg()[0]:.1f})")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>12}  {note}")
    if args.json:
        figures = {
            "submits_s": rate,
            "sbatch_s": float(slurm_rate) if slurm_rate != "n/a" else None,
            "submit_ratio": rate / float(slurm_rate) if slurm_rate != "n/a" else None,
            "detail_p50_ms": statistics.median(detail_lat) * ms,
            "detail_p95_ms": percentile(detail_lat, 0.95) * ms,
            "list1000_p95_ms": percentile(big_lat, 0.95) * ms,
            **{f"cpu_{name}_ms": value for name, value in cpu_ms.items()},
            "client_cpu_submit_ms": client_cpu_ms["submit"],
        }
        args.json.write_text(json.dumps(figures))
    if not args.keep:
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
