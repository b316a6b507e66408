"""Load benchmark: the portal as `make run` serves it, under many clients and 4 stalled readers.

    .venv/bin/python bench/load.py [--clients 50] [--seconds 60] [--workers 2]

What it does:
- a throwaway state directory var/bench-load-<pid>/ (its own SQLite DB, logs, cache), migrated,
  with one user and API token per client (the throttles keep their production rates), a process
  node, and for each client a finished job with a 64 KB log; one more task's log is 200 MB;
- `manage.py serve` (granian, --workers processes) and `manage.py runscheduler`, both running
  (`--server daphne`: daphne processes on one socket, as `make run` served before, to compare),
  started by bench/served.py (shared with bench/api.py);
- 4 stalled readers: raw sockets that request the 200 MB log and never read, replaced every
  20 s so that 4 are always in flight (the server drops each after PAI_HTTP_WRITE_TIMEOUT);
- --clients threads, each with a keep-alive connection, for --seconds: submits (POST
  /api/v2/jobs, 10 %), job lists (GET /api/v2/jobs?limit=20, 30 %), job details (30 %) and log
  reads (the signed log link, 30 %);
- afterwards every accepted submit is looked up: one that is not there is a lost submit.
Prints per kind of request: count, errors (anything but 2xx, or no answer), p50 / p95 / p99.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.served import JOB_YAML, PYTHON, ROOT, Client, percentile, prepare, served, served_env

BIG_LOG_BYTES = 200 * 1024 * 1024
STALLED_READERS = 4
STALLED_RENEW_S = 20
MIX = [("submit", 10), ("list", 30), ("detail", 30), ("log", 30)]


def prepare_database(clients: int, var_dir: Path) -> None:
    """Runs in a child process with the bench environment; prints what the clients need as JSON."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from accounts.tokens import issue_token
    from clusters.models import Node, VirtualCluster
    from jobs.actions import submit_job
    from jobs.models import Job, JobState, Task, TaskState
    from web.api.links import log_link

    Node.objects.create(name="local", executor="process", cpus=2, memory_mb=4096)
    vc = VirtualCluster.objects.get(name="default")
    logs = var_dir / "bench-logs"
    logs.mkdir()
    small_log = logs / "small.log"
    small_log.write_bytes(b"a line of a task's log\n" * 2900)  # ~64 KB
    big_log = logs / "big.log"
    with big_log.open("wb") as file:
        file.truncate(BIG_LOG_BYTES)
    people = []
    template = None
    for number in range(clients + 1):
        user = get_user_model().objects.create_user(f"user{number}", password=f"password-{number}-x")
        template = template or submit_job(user, JOB_YAML.format(name="template"))  # a real spec to copy
        job = Job.objects.create(
            owner=user,
            name="finished",
            virtual_cluster=vc,
            config_text=template.config_text,
            spec=template.spec,
            state=JobState.SUCCEEDED,
        )
        log = big_log if number == clients else small_log
        task = Task.objects.create(job=job, role="worker", index=0, state=TaskState.SUCCEEDED, log_path=str(log))
        people.append({"token": issue_token(user)[0], "job": job.full_name, "log": log_link(task)})
    print(json.dumps({"clients": people[:clients], "big_log": people[clients]["log"]}))


@dataclass
class Results:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {kind: [] for kind, _ in MIX})
    errors: dict[str, int] = field(default_factory=lambda: {kind: 0 for kind, _ in MIX})
    error_samples: list[str] = field(default_factory=list)
    accepted: list[tuple[str, str]] = field(default_factory=list)  # (token, job full name)
    server_peak_mb: list[float] = field(default_factory=lambda: [0.0])
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, status: int, seconds: float, note: str = "") -> None:
        with self.lock:
            self.latencies[kind].append(seconds)
            if not 200 <= status < 300:
                self.errors[kind] += 1
                if len(self.error_samples) < 10:
                    self.error_samples.append(f"{kind}: {status} {note}".strip())


def client_loop(number: int, person: dict[str, str], port: int, deadline: float, results: Results) -> None:
    client = Client(port, person["token"])
    chooser = random.Random(number)
    kinds, weights = zip(*MIX, strict=True)
    submitted = 0
    while time.monotonic() < deadline:
        kind = chooser.choices(kinds, weights)[0]
        name = f"load-{number}-{submitted}"
        requests = {
            "submit": ("POST", "/api/v2/jobs", JOB_YAML.format(name=name), "text/yaml"),
            "list": ("GET", "/api/v2/jobs?limit=20", None, ""),
            "detail": ("GET", f"/api/v2/jobs/{person['job']}", None, ""),
            "log": ("GET", person["log"], None, ""),
        }
        began = time.perf_counter()
        try:
            status, seconds = client.request(*requests[kind])
        except (OSError, http.client.HTTPException) as error:
            results.record(kind, 0, time.perf_counter() - began, f"no answer: {error}")
            continue
        results.record(kind, status, seconds)
        if kind == "submit":
            submitted += 1
            if status == 202:
                with results.lock:
                    results.accepted.append((person["token"], f"user{number}~{name}"))


def stalled_readers(port: int, path: str, deadline: float) -> None:
    """Keep STALLED_READERS requests for the big log in flight, none of them ever read."""
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    while time.monotonic() < deadline:
        sockets = []
        for _ in range(STALLED_READERS):
            stalled = socket.socket()
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stalled.connect(("127.0.0.1", port))
            stalled.sendall(request)
            sockets.append(stalled)
        time.sleep(min(STALLED_RENEW_S, max(0.0, deadline - time.monotonic())))
        for stalled in sockets:
            stalled.close()


def tree_rss_mb(pids: list[int]) -> float:
    """Resident memory of these processes and their children (the server's workers), in MB."""
    found, total_kb = set(pids), 0
    for pid in pids:
        children = Path(f"/proc/{pid}/task/{pid}/children")
        found.update(int(child) for child in (children.read_text().split() if children.exists() else []))
    for pid in found:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total_kb += int(status.split("VmRSS:")[1].split()[0]) if "VmRSS:" in status else 0
    return total_kb / 1024


def peak_rss(pids: list[int], deadline: float, peak: list[float]) -> None:
    while time.monotonic() < deadline:
        peak[0] = max(peak[0], tree_rss_mb(pids))
        time.sleep(1)


def lost_submits(port: int, accepted: list[tuple[str, str]]) -> int:
    lost = 0
    clients: dict[str, Client] = {}
    for token, full_name in accepted:
        client = clients.setdefault(token, Client(port, token))
        status, _ = client.request("GET", f"/api/v2/jobs/{full_name}")
        lost += status != 200
    return lost


def run(args: argparse.Namespace, var_dir: Path) -> tuple[Results, int, float]:
    # Production's settings: none of this shell's PAI_* variables (the throttles keep their rates).
    env = served_env(var_dir, {key: value for key, value in os.environ.items() if not key.startswith("PAI_")})
    setup = prepare(__file__, env, str(args.clients))
    scheduler = [PYTHON, "manage.py", "runscheduler"]
    with served(var_dir, env, workers=args.workers, server=args.server, beside=(scheduler,)) as (port, server_pids):
        print(f"serving on 127.0.0.1:{port}; {args.clients} clients for {args.seconds} s", flush=True)
        results = Results()
        deadline = time.monotonic() + args.seconds
        threads = [
            threading.Thread(target=stalled_readers, args=(port, setup["big_log"], deadline), daemon=True),
            threading.Thread(target=peak_rss, args=(server_pids, deadline, results.server_peak_mb), daemon=True),
        ]
        threads += [
            threading.Thread(target=client_loop, args=(number, person, port, deadline, results))
            for number, person in enumerate(setup["clients"])
        ]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads[2:]:
            thread.join()
        elapsed = time.monotonic() - began
        return results, lost_submits(port, results.accepted), elapsed


def report(results: Results, lost: int, elapsed: float) -> None:
    ms = 1000.0
    every = [seconds for values in results.latencies.values() for seconds in values]
    rows = [("kind", "requests", "errors", "p50 ms", "p95 ms", "p99 ms")]
    for kind, values in [*results.latencies.items(), ("all", every)]:
        errors = sum(results.errors.values()) if kind == "all" else results.errors[kind]
        rows.append(
            (
                kind,
                str(len(values)),
                str(errors),
                f"{statistics.median(values) * ms:.1f}" if values else "-",
                f"{percentile(values, 0.95) * ms:.1f}",
                f"{percentile(values, 0.99) * ms:.1f}",
            )
        )
    print()
    for row in rows:
        print(f"{row[0]:<8}" + "".join(f"{cell:>10}" for cell in row[1:]))
    print(f"\n{len(every) / elapsed:.0f} requests/s; submits accepted {len(results.accepted)}, lost {lost}")
    print(f"web server memory peak (all its processes): {results.server_peak_mb[0]:.0f} MB")
    for sample in results.error_samples:
        print("error:", sample)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=2, help="web server processes")
    parser.add_argument("--server", choices=["granian", "daphne"], default="granian", help="daphne: as before")
    parser.add_argument("--keep", action="store_true", help="keep var/bench-load-<pid>/ afterwards")
    parser.add_argument("--prepare-database", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare_database is not None:
        prepare_database(args.prepare_database, Path(os.environ["PAI_VAR_DIR"]))
        return
    var_dir = ROOT / "var" / f"bench-load-{os.getpid()}"
    var_dir.mkdir(parents=True)
    try:
        results, lost, elapsed = run(args, var_dir)
    finally:
        if not args.keep:
            shutil.rmtree(var_dir, ignore_errors=True)
    report(results, lost, elapsed)


if __name__ == "__main__":
    main()
