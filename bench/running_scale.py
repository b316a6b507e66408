"""Running tasks at cluster scale: the real scheduler passes against many (fake) Docker engines.

    .venv/bin/python bench/running_scale.py [--engines 50] [--tasks 1000] [--exits 20] [--seconds 20]
                                            [--designs events,streams] [--budget S] [--slowest PATH]

Fills a fresh SQLite database with `--tasks` running one-task jobs spread over `--engines` Docker
nodes, each node's engine a fake one (bench/fake_docker.py, its own process: a unix socket per
engine, speaking the Docker Engine API the DockerExecutor uses, with the containers of those
tasks running). Then, in a process of its own (the scheduler process, measured), runs the real
`Scheduler` loop as `runscheduler` runs it: its first pass (the reconcile of a restart) apart,
then passes until every stream it follows is open (at most 60 s), then `--seconds` of passes
while the engines' containers exit at `--exits` a second (random ones,
exit code 0), then until every exit is recorded (at most 30 s more). Prints the pass times, how
long after a container's exit its job was recorded as ended (the fake engine's exit time to the
job's completed_at: the same machine's clock), the scheduler process's threads and memory
(most seen), and the engine calls made after the first pass (a second and an exit). Each design
runs in a scheduler process of its own, on a copy of the same database and fresh fake engines, one
after the other, side by side in the table: "polling" as before the event streams (every running
task inspected each pass) and "events" (each engine's event stream names the containers that died;
only those inspected; at a low rate, and after a stream opens, a full look: a listing of the node's
running containers, the others inspected) follow each running container's log on a
thread of its own, as before issue 49's log streams; "streams", as now, reads the events and every
container's log on the process's one stream loop (clusters/executors/engine_streams.py).

"polling" inspects every running task each pass (no FULL_LOOK_TASKS budget: the design before the
event streams). `--budget S` stops a design once it has run S seconds (checked between passes) and
prints what it achieved: at 10,000 tasks the old design's passes take minutes. `--slowest PATH`
keeps the first pass's profile and the slowest later pass's (PATH.<design>.first / .slowest).

Goal (issue 49): 500 engines, 10,000 running tasks, 200 exits a second: pass p95 < 1 s, an exit
recorded within 2 s p95, threads <= engines + 50, memory < 1 GB.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scheduler_scale import spec  # noqa: E402  (one job spec for the scheduler benches)

# How the scheduler learns of exits: "polling", as before the event streams: each running task
# inspected each pass (its executor says it cannot tell which ended); "events": each engine's
# event stream names the containers that died, those are inspected (and all, at a low rate).
DESIGNS = ("polling", "events", "streams")
THREADED_LOGS = ("polling", "events")  # a thread per followed container's log, as before
# Past this many tasks those designs' logs are followed on the stream loop too: 10,000 log threads
# took this 2-CPU box to load 440 (their threads at 2,000 tasks: 2,103). Their exit design stays.
LOG_THREADS_MOST = 2000
DRAIN_S = 30.0
SETTLE_S = 60.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else float("nan")


THREAD_KINDS = (("node-", "lanes"), ("pai-docker-streams", "stream loop"), ("MainThread", "loop"))


def thread_cpu() -> dict[str, float]:
    """CPU seconds of the process's threads alive now, by kind (THREAD_KINDS; the rest "other")."""
    ticks = os.sysconf("SC_CLK_TCK")
    spent: dict[str, float] = {}
    for thread in threading.enumerate():
        kind = next((k for prefix, k in THREAD_KINDS if thread.name.startswith(prefix)), "other")
        try:
            fields = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # (ended meanwhile)
        spent[kind] = spent.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return spent


def setup_django(var: Path, database: Path) -> None:
    os.environ.update(
        PAI_VAR_DIR=str(var),
        PAI_SQLITE_PATH=str(database),
        PAI_LOG_LEVEL="ERROR",
        DJANGO_SETTINGS_MODULE="pai_portal.settings",
    )
    import django

    django.setup()


def fill(args: argparse.Namespace, var: Path, sockets: Path) -> Path:
    """The database of running jobs and the fake engines' spec (their containers); the spec's path."""
    from django.core.management import call_command
    from django.utils import timezone

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    from clusters.executors.docker import LOG_PATH_LABEL
    from clusters.executors.docker_engine import MARKER_LABEL
    from clusters.models import Node, VirtualCluster
    from jobs.models import Job, JobState, Task, TaskState

    VirtualCluster.objects.all().delete()
    vc = VirtualCluster.objects.create(name="default", share_percent=100)
    nodes = Node.objects.bulk_create(
        Node(
            name=f"engine-{i:04d}",
            address=f"10.2.{i // 250}.{i % 250 + 1}",
            executor="docker",
            docker_url=f"unix://{sockets}/engine-{i}.sock",
            cpus=64,
            memory_mb=512 * 1024,
        )
        for i in range(args.engines)
    )
    user = get_user_model().objects.create_user("bench")
    jobs = Job.objects.bulk_create(
        Job(
            owner=user,
            name=f"running-{i}",
            state=JobState.RUNNING,
            virtual_cluster=vc,
            config_text="",
            spec=spec(f"running-{i}", tasks=1, gpus=0, vc="default", command="sleep infinity"),
            job_attempt=1,
        )
        for i in range(args.tasks)
    )
    logs = var / "task-logs"
    logs.mkdir()
    engines: list[list[Any]] = [[] for _ in nodes]
    tasks = []
    for i, job in enumerate(jobs):
        node_index = i % len(nodes)
        container_id = uuid.uuid4().hex + uuid.uuid4().hex
        log_path = logs / f"{job.pk}.log"
        labels = {
            "pai.job-id": str(job.pk),
            "pai.job": f"bench~{job.name}",
            "pai.job-attempt": "1",
            "pai.role": "worker",
            "pai.index": "0",
            "pai.task-attempt": "1",
            MARKER_LABEL: "pai",
            LOG_PATH_LABEL: str(log_path),
        }
        engines[node_index].append([container_id, f"pai-{job.pk}-worker-0-1-1", labels])
        tasks.append(
            Task(
                job=job,
                role="worker",
                index=0,
                state=TaskState.RUNNING,
                attempt=1,  # (as placement leaves it: an exit keeps its attempt, a TaskAttempt row)
                node=nodes[node_index],
                executor_id=container_id,
                ip=nodes[node_index].address,
                log_path=str(log_path),
                started_at=timezone.now(),
            )
        )
    Task.objects.bulk_create(tasks, batch_size=2000)
    spec_path = var / "engines.json"
    spec_path.write_text(json.dumps({"engines": engines}))
    return spec_path


# -- the fake engines ------------------------------------------------------------------------------


class Fakes:
    """The fake engines' process and its control socket."""

    def __init__(self, spec_path: Path, sockets: Path) -> None:
        self.sockets = sockets
        (sockets / "ready").unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "fake_docker.py"), str(spec_path), str(sockets)]
        )
        deadline = time.monotonic() + 120
        while not (sockets / "ready").exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the fake engines did not start")
            time.sleep(0.1)

    def ask(self, path: str) -> Any:
        with socket.socket(socket.AF_UNIX) as control:
            control.connect(str(self.sockets / "control.sock"))
            control.sendall(f"GET {path} HTTP/1.1\r\nHost: fake\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += control.recv(65536)
            head, _, body = head.partition(b"\r\n\r\n")
            length = int(next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))[15:])
            while len(body) < length:
                body += control.recv(1 << 20)
            return json.loads(body)

    def cpu(self) -> float:
        """The fake engines' process's CPU seconds so far (it shares the box with the scheduler)."""
        import psutil

        times = psutil.Process(self.process.pid).cpu_times()
        return float(times.user + times.system)

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


# -- one design, in the scheduler's own process ---------------------------------------------------


def _set_up_design(args: argparse.Namespace) -> None:
    """The scheduler process as the design has it."""
    if args.trial == "polling":
        from clusters.executors.docker import DockerExecutor
        from scheduling import ending

        DockerExecutor.exits_seen = lambda self, may_look_in_full=True: None  # type: ignore[method-assign]
        ending.FULL_LOOK_TASKS = 10**9  # (every running task each pass, as before the budget)
    if args.trial in THREADED_LOGS and args.tasks <= LOG_THREADS_MOST:
        from clusters.executors.docker_logs import ContainerLogs

        ContainerLogs.on_loop = False


def _settle(args: argparse.Namespace, loop: Any, fakes: Fakes) -> float:
    """The streams open on the loop after the first pass asked for them (an event stream per engine;
    where logs are on the loop, a log stream per container too): passes until they are (at most
    SETTLE_S), as a scheduler that has run a while has them, before the exits begin. How long it took."""
    began = time.monotonic()
    logs_on_loop = args.trial not in THREADED_LOGS or args.tasks > LOG_THREADS_MOST
    while time.monotonic() - began < SETTLE_S:
        open_now = fakes.ask("/connections")
        events = args.trial == "polling" or open_now.get("events", 0) >= args.engines  # (polling follows none)
        if events and (not logs_on_loop or open_now.get("logs", 0) >= args.tasks):
            break
        if not loop.run_pass():
            loop.idle_wait(0.2)
    return time.monotonic() - began


def trial(args: argparse.Namespace) -> dict[str, Any]:
    import psutil

    var = Path(args.var)
    setup_django(var, Path(args.database))
    from django.db.models import F

    from jobs.models import Task
    from scheduling.scheduler import Scheduler

    _set_up_design(args)
    from scheduling import ending

    ending_cpu = [0.0]  # (the loop thread's CPU in the ending phase: what recording the exits costs it)
    real_ending_run = ending.run

    def timed_ending(*a: Any, **k: Any) -> Any:
        before = time.thread_time()
        try:
            return real_ending_run(*a, **k)
        finally:
            ending_cpu[0] += time.thread_time() - before

    ending.run = timed_ending
    fakes = Fakes(var / "engines.json", Path(args.sockets))
    me = psutil.Process()
    most = {"threads": 0, "rss": 0}

    def look() -> None:
        most["threads"] = max(most["threads"], me.num_threads())
        most["rss"] = max(most["rss"], me.memory_info().rss)

    trial_began = time.monotonic()

    def over_budget() -> bool:
        return args.budget is not None and time.monotonic() - trial_began > args.budget

    slowest: dict[str, Any] = {"s": 0.0, "profile": None}

    def timed_pass(loop: Any) -> tuple[bool, float]:
        """A pass, its wall time; with --slowest, the slowest one's profile kept."""
        profile = None
        if args.slowest:
            import cProfile

            profile = cProfile.Profile()
            profile.enable()
        began = time.perf_counter()
        busy = loop.run_pass()
        took = time.perf_counter() - began
        if profile is not None:
            profile.disable()
            if took > slowest["s"]:
                slowest.update(s=took, profile=profile)
        return busy, took

    try:
        loop = Scheduler(holder="bench")
        began = time.perf_counter()
        if args.slowest:
            import cProfile

            first_profile = cProfile.Profile()
            first_profile.runcall(loop.run_pass)
            first_profile.dump_stats(f"{args.slowest}.{args.trial}.first")
        else:
            loop.run_pass()
        first = time.perf_counter() - began
        look()
        settled = _settle(args, loop, fakes)
        calls_before = fakes.ask("/calls")  # (the first pass's: a listing and a log stream per container)
        fakes.ask(f"/exits?rate={args.exits}")
        exits_began = time.monotonic()
        passes: list[float] = []
        cpu: list[float] = []  # (the process's, its threads' included: a busy box leaves it comparable)
        cpu_began, loop_began, ending_began = time.process_time(), time.thread_time(), ending_cpu[0]
        fakes_began, threads_began = fakes.cpu(), thread_cpu()
        end = time.monotonic() + args.seconds
        while time.monotonic() < end and not over_budget():
            cpu_before = time.process_time()
            busy, took = timed_pass(loop)
            passes.append(took)
            cpu.append(time.process_time() - cpu_before)
            look()
            if not busy:
                loop.idle_wait(0.5)
        fakes.ask("/stop")
        exits_lasted = time.monotonic() - exits_began
        cores = (time.process_time() - cpu_began) / exits_lasted
        fakes_cores = (fakes.cpu() - fakes_began) / exits_lasted
        threads_spent = thread_cpu()  # (a lane's thread that ended meanwhile is not counted)
        by_thread = {k: (threads_spent.get(k, 0.0) - threads_began.get(k, 0.0)) / exits_lasted for k in threads_spent}
        record = {container: at for container, at in fakes.ask("/record")}
        drain_end = time.monotonic() + DRAIN_S
        while time.monotonic() < drain_end and not over_budget():
            busy, took = timed_pass(loop)
            passes.append(took)
            look()
            ended = Task.objects.filter(executor_id__in=list(record), job__completed_at__isnull=False).count()
            if ended == len(record):
                break
            if not busy:
                loop.idle_wait(0.2)
        # (the exits' and the drain's CPU: the whole process's, and the loop thread's alone)
        cpu_spent, loop_spent = time.process_time() - cpu_began, time.thread_time() - loop_began
        ending_spent = ending_cpu[0] - ending_began
        finished = dict(
            Task.objects.filter(executor_id__in=list(record), job__completed_at__isnull=False)
            .annotate(completed=F("job__completed_at"))
            .values_list("executor_id", "completed")
        )
        latencies = [finished[c].timestamp() - at for c, at in record.items() if c in finished]
        calls = {kind: count - calls_before.get(kind, 0) for kind, count in fakes.ask("/calls").items()}
        threading.excepthook = lambda _: None  # (the log threads of today's design, cut off below)
        if slowest["profile"] is not None:
            slowest["profile"].dump_stats(f"{args.slowest}.{args.trial}.slowest")
    finally:
        fakes.close()
    return {
        "first pass s": first,
        "settled s": settled,
        "passes": len(passes),
        "pass p50 s": statistics.median(passes) if passes else float("nan"),
        "pass p95 s": percentile(passes, 0.95),
        "pass max s": max(passes, default=float("nan")),
        "pass CPU p50 s": statistics.median(cpu) if cpu else float("nan"),
        "CPU cores": cores,
        "fakes CPU cores": fakes_cores,
        **{f"{kind} CPU cores": by_thread.get(kind, 0.0) for _, kind in (*THREAD_KINDS, ("", "other"))},
        "exits": len(record),
        "CPU per exit ms": 1000 * cpu_spent / max(1, len(record)),
        "loop CPU per exit ms": 1000 * loop_spent / max(1, len(record)),
        "ending CPU per exit ms": 1000 * ending_spent / max(1, len(record)),
        "exits recorded": len(latencies),
        "exit recorded p50 s": statistics.median(latencies) if latencies else float("nan"),
        "exit recorded p95 s": percentile(latencies, 0.95),
        "threads": most["threads"],
        "budget spent": over_budget(),
        "trial s": time.monotonic() - trial_began,
        "rss MB": most["rss"] / 2**20,
        "exits lasted s": exits_lasted,
        "engine calls": {kind: count / exits_lasted for kind, count in calls.items()},
        "calls per exit": {kind: count / max(1, len(record)) for kind, count in calls.items()},
    }


def run_trial(args: argparse.Namespace, design: str, var: Path, database: Path, sockets: Path) -> dict[str, Any]:
    copy = var / f"{design}.sqlite3"
    shutil.copy(database, copy)
    out = var / f"{design}.json"
    command = [
        sys.executable,
        __file__,
        "--trial",
        design,
        "--var",
        str(var),
        "--database",
        str(copy),
        "--sockets",
        str(sockets),
        "--out",
        str(out),
        *("--engines", str(args.engines), "--tasks", str(args.tasks)),
        *("--exits", str(args.exits), "--seconds", str(args.seconds)),
        *(("--profile", args.profile) if args.profile else ()),
        *(("--slowest", args.slowest) if args.slowest else ()),
        *(("--budget", str(args.budget)) if args.budget is not None else ()),
    ]
    subprocess.run(command, check=True)
    return dict(json.loads(out.read_text()))


ROWS = [
    ("first pass (reconcile)", "first pass s", "{:.2f} s"),
    ("streams open after", "settled s", "{:.1f} s"),
    ("passes", "passes", "{}"),
    ("pass p50", "pass p50 s", "{:.3f} s"),
    ("pass p95", "pass p95 s", "{:.3f} s"),
    ("pass max", "pass max s", "{:.3f} s"),
    ("pass CPU p50", "pass CPU p50 s", "{:.3f} s"),
    ("CPU while exiting", "CPU cores", "{:.2f} cores"),
    *((f"  of which {kind}", f"{kind} CPU cores", "{:.2f} cores") for _, kind in (*THREAD_KINDS, ("", "other"))),
    ("fake engines' CPU then", "fakes CPU cores", "{:.2f} cores"),
    ("exits for", "exits lasted s", "{:.0f} s"),
    ("exits", "exits", "{}"),
    ("exits recorded", "exits recorded", "{}"),
    ("CPU per exit", "CPU per exit ms", "{:.1f} ms"),
    ("loop CPU per exit", "loop CPU per exit ms", "{:.1f} ms"),
    ("ending phase CPU/exit", "ending CPU per exit ms", "{:.1f} ms"),
    ("exit recorded p50", "exit recorded p50 s", "{:.2f} s"),
    ("exit recorded p95", "exit recorded p95 s", "{:.2f} s"),
    ("threads (most)", "threads", "{}"),
    ("RSS (most)", "rss MB", "{:.0f} MB"),
    ("design's run", "trial s", "{:.0f} s"),
    ("stopped by --budget", "budget spent", "{}"),
]
# (engine calls per second of exits and per exit: the drain's calls counted in, the first pass's not)


def report(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    print(
        f"{args.engines} fake engines, {args.tasks} running tasks, {args.exits} exits/s for {args.seconds} s of passes "
        f"(SQLite; load average {os.getloadavg()[0]:.1f})"
    )
    if args.tasks > LOG_THREADS_MOST and any(design in THREADED_LOGS for design in results):
        print(
            f"({', '.join(THREADED_LOGS)}: logs on the stream loop, not a thread each, past {LOG_THREADS_MOST} tasks)"
        )
    print(f"{'measure':<24}" + "".join(f"{design:>16}" for design in results))
    for label, key, fmt in ROWS:
        print(f"{label:<24}" + "".join(f"{fmt.format(r[key]):>16}" for r in results.values()))
    kinds = sorted({kind for r in results.values() for kind in r["engine calls"]})
    for kind in kinds:
        rates = (r["engine calls"].get(kind, 0) for r in results.values())
        print(f"{'calls/s: ' + kind:<24}" + "".join(f"{rate:>16.0f}" for rate in rates))
    for kind in kinds:
        rates = (r["calls per exit"].get(kind, 0) for r in results.values())
        print(f"{'calls/exit: ' + kind:<24}" + "".join(f"{rate:>16.2f}" for rate in rates))
    goals = {
        design: {
            "pass p95 < 1 s": r["pass p95 s"] < 1.0,
            "exit recorded p95 < 2 s": r["exit recorded p95 s"] < 2.0 and r["exits recorded"] == r["exits"],
            "threads <= engines + 50": r["threads"] <= args.engines + 50,
            "memory < 1 GB": r["rss MB"] < 1024,
        }
        for design, r in results.items()
    }
    print(json.dumps(goals))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--exits", type=float, default=20, help="containers exiting per second")
    parser.add_argument("--seconds", type=float, default=20, help="how long the exits go on")
    parser.add_argument("--designs", default="events,streams", help=f"which of {', '.join(DESIGNS)}")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--profile", help="the scheduler processes' profiles (cProfile) to PROFILE.<design>")
    parser.add_argument(
        "--slowest", help="the first pass's and the slowest later pass's profiles to SLOWEST.<design>.first/.slowest"
    )
    parser.add_argument(
        "--budget",
        type=float,
        help="seconds each design may take (its first pass counted; checked between passes): past it the "
        "design stops and prints what it achieved (the old design's passes at 10,000 tasks take minutes)",
    )
    for internal in ("--trial", "--var", "--database", "--sockets", "--out"):
        parser.add_argument(internal, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.trial and args.profile:
        import cProfile

        profile = cProfile.Profile()
        result = profile.runcall(trial, args)
        profile.dump_stats(f"{args.profile}.{args.trial}")
        Path(args.out).write_text(json.dumps(result))
        os._exit(0)
    if args.trial:
        Path(args.out).write_text(json.dumps(trial(args)))
        os._exit(0)  # (today's design's log threads, cut off mid-stream, need no orderly exit)
    var = Path(tempfile.mkdtemp(prefix="pai-bench-running-"))
    # (unix socket paths are short: the engines' live in a folder of their own under /tmp)
    sockets = Path(tempfile.mkdtemp(prefix="pai-fake-"))
    try:  # (the databases, task logs and sockets go with the run, whatever ends it)
        database = var / "filled.sqlite3"
        setup_django(var, database)
        began = time.perf_counter()
        fill(args, var, sockets)
        from django.db import connections

        connections.close_all()  # (the file whole, for the trials' copies)
        print(f"(filled in {time.perf_counter() - began:.0f} s)")
        results = {design: run_trial(args, design, var, database, sockets) for design in args.designs.split(",")}
        report(args, results)
        if args.json:
            args.json.write_text(json.dumps(results))
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
        shutil.rmtree(var, ignore_errors=True)


if __name__ == "__main__":
    main()
