"""Chaos: the scheduler killed with SIGKILL at random moments while jobs run; nothing may be lost,
started twice, stranded or left behind.

    .venv/bin/python bench/chaos.py [--jobs 200] [--kills 20] [--postgres] [--docker [--freeze]]

A fresh portal (its own var dir; SQLite, or a fresh PostgreSQL database with --postgres) gets a
mix of jobs: ones that succeed, fail (and use their jobRetryCount), fail once then succeed through
taskRetryCount, and two-task gangs. `manage.py runscheduler` runs in a subprocess and is killed
with SIGKILL `--kills` times at random moments (0.2-2 s apart), each time restarted at once with
the same scheduler id. `--docker` runs the jobs in containers on a Docker engine of their own
(`scripts/dev-cluster.sh up 1`, so the machine's own engine and its containers are left alone)
and also stops and restarts that engine once mid-run. Then the run goes on until every job is
final. `--freeze` (with --docker) adds a second engine and, after the kills, hangs it (its dockerd
stopped with SIGSTOP, its containers running on) until the heartbeat marks its node down, then
thaws it: the table adds the time to detect and how much longer than before the fault unrelated
one-task jobs took to start. The table says:

  jobs lost          submitted but with no row
  tasks started twice  one task attempt whose log shows two starts
  jobs stranded      not final when the run ended
  wrong outcome      final, but not what the job's command implies
  orphans            task processes / containers left after the last job ended
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from clusters.executors.supervise import SERVER_PID_NAME  # noqa: E402

NAMESPACE = f"paichaos{uuid.uuid4().hex[:6]}"
CLUSTER = ["bash", str(ROOT / "scripts" / "dev-cluster.sh")]
CLUSTER_ARGS = ["--name", "paichaos", "--subnet", "10.251.0.0/24", "--cpus", "8", "--memory-mb", "8192"]
ENGINE = "unix:///run/pai-dev-cluster/paichaos/1/docker.sock"
FROZEN_ENGINE = "unix:///run/pai-dev-cluster/paichaos/2/docker.sock"
# --freeze: unrelated one-task jobs submitted before the fault and while the engine hangs.
PROBE_JOBS = 5

ROLE = """  {name}:
    instances: {instances}
    dockerImage: image
{extra}    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - {command}
"""
CONFIG = """protocolVersion: 2
name: {name}
type: job
jobRetryCount: {job_retries}
prerequisites:
  - {{name: image, type: dockerimage, uri: pai-portal/base:latest}}
taskRoles:
{roles}"""
START = "echo CHAOS-START"
# kind -> (roles, jobRetryCount, expected final state)
MIX = {
    "succeeds": (ROLE.format(name="main", instances=1, extra="", command=f'"{START}; sleep 0.3"'), 0, "SUCCEEDED"),
    "fails": (ROLE.format(name="main", instances=1, extra="", command=f'"{START}; exit 3"'), 1, "FAILED"),
    "retries": (
        ROLE.format(
            name="main",
            instances=1,
            extra="    taskRetryCount: 1\n",
            command=f'"{START}; test -f once && exit 0; touch once; exit 1"',
        ),
        0,
        "SUCCEEDED",
    ),
    "gang": (ROLE.format(name="worker", instances=2, extra="", command=f'"{START}; sleep 0.5"'), 0, "SUCCEEDED"),
}


def setup(args: argparse.Namespace) -> dict[str, str]:
    var = Path(tempfile.mkdtemp(prefix="pai-chaos-"))
    env = {
        **os.environ,
        "PAI_VAR_DIR": str(var),
        "PAI_LOG_LEVEL": "WARNING",
        "PAI_DOCKER_NAMESPACE": NAMESPACE,
        "PAI_SCHEDULER_INTERVAL": "0.05",
        "PAI_NODE_DOWN_AFTER_SECONDS": "3",
        "PAI_NODE_HEARTBEAT_SECONDS": "1",
        "DJANGO_SETTINGS_MODULE": "pai_portal.settings",
    }
    if args.postgres:
        import psycopg

        name = f"chaos_{uuid.uuid4().hex[:8]}"
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        env["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{name}"
    else:
        env["PAI_SQLITE_PATH"] = str(var / "db.sqlite3")
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return env


def submit_all(count: int, docker: bool, freeze: bool = False) -> dict[str, str]:
    from django.contrib.auth import get_user_model

    from clusters.models import Node
    from jobs.actions import submit_job

    if docker:
        Node.objects.create(
            name="chaos-1", executor="docker", docker_url=ENGINE, address="10.251.0.2", cpus=8, memory_mb=8192
        )
    if docker and freeze:
        Node.objects.create(
            name="chaos-2", executor="docker", docker_url=FROZEN_ENGINE, address="10.251.0.3", cpus=8, memory_mb=8192
        )
    else:
        Node.objects.create(name="local", executor="process", cpus=8, memory_mb=8192)
    user = get_user_model().objects.create_user("chaos", password="chaos-password-1")
    expected = {}
    # A task retry starts a new container, whose files start afresh: the "retries" kind's marker
    # file lives only on the process executor's work dir.
    kinds = [kind for kind in MIX if not (docker and kind == "retries")]
    for i in range(count):
        kind = kinds[i % len(kinds)]
        roles, job_retries, outcome = MIX[kind]
        name = f"{kind}-{i}"
        submit_job(user, CONFIG.format(name=name, job_retries=job_retries, roles=roles))
        expected[name] = outcome
    return expected


def start_scheduler(env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "manage.py", "runscheduler", "--id", "chaos-scheduler"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def restart_dockerd() -> None:
    subprocess.run([*CLUSTER, "stop-node", "1", "--name", "paichaos"], check=True, capture_output=True)
    time.sleep(1)
    subprocess.run([*CLUSTER, "start-node", "1", "--name", "paichaos"], check=True, capture_output=True)


def start_delays(prefix: str, expected: dict[str, str], timeout: float = 120.0) -> list[float]:
    """Submit PROBE_JOBS one-task jobs; seconds from each one's submit to its task's start."""
    from django.contrib.auth import get_user_model

    from jobs.actions import submit_job
    from jobs.models import Task

    user = get_user_model().objects.get(username="chaos")
    roles, job_retries, outcome = MIX["succeeds"]
    jobs = []
    for i in range(PROBE_JOBS):
        name = f"probe-{prefix}-{i}"
        jobs.append(submit_job(user, CONFIG.format(name=name, job_retries=job_retries, roles=roles)))
        expected[name] = outcome
    deadline = time.monotonic() + timeout
    starts: dict[int, float] = {}
    while len(starts) < len(jobs) and time.monotonic() < deadline:
        for task in Task.objects.filter(job__in=jobs, started_at__isnull=False).select_related("job"):
            if task.started_at is not None:
                starts.setdefault(task.job_id, (task.started_at - task.job.created_at).total_seconds())
        time.sleep(0.1)
    return [starts.get(job.pk, timeout) for job in jobs]


def freeze_fault(expected: dict[str, str]) -> list[tuple[str, str]]:
    """Hang the second engine until its node is down, then thaw it: the rows of the table."""
    from datetime import UTC, datetime

    from clusters.models import Node

    normal = sorted(start_delays("before", expected))[PROBE_JOBS // 2]
    frozen_at = datetime.now(UTC)
    subprocess.run([*CLUSTER, "freeze-node", "2", "--name", "paichaos"], check=True, capture_output=True)
    try:
        during = start_delays("frozen", expected)
        node = Node.objects.get(name="chaos-2")
        deadline = time.monotonic() + 300
        while node.down_since is None and time.monotonic() < deadline:
            time.sleep(0.1)
            node.refresh_from_db()
    finally:
        subprocess.run([*CLUSTER, "thaw-node", "2", "--name", "paichaos"], check=True, capture_output=True)
    detected = f"{(node.down_since - frozen_at).total_seconds():.1f} s" if node.down_since else "never (300 s)"
    return [
        (
            "frozen engine: down after",
            f"{detected} (PAI_NODE_DOWN_AFTER_SECONDS {os.environ['PAI_NODE_DOWN_AFTER_SECONDS']})",
        ),
        ("unrelated job start, normal", f"{normal:.2f} s (median of {PROBE_JOBS})"),
        ("longest extra wait while frozen", f"{max(0.0, max(during) - normal):.2f} s"),
    ]


def run(
    env: dict[str, str],
    kills: int,
    docker: bool,
    deadline_s: float,
    fault: Callable[[], list[tuple[str, str]]] | None = None,
    fault_rows: list[tuple[str, str]] | None = None,
) -> int:
    from jobs.models import Job
    from jobs.states import FINISHED_JOB_STATES

    scheduler = start_scheduler(env)
    done_kills = 0
    restarted_engine = False
    deadline = time.monotonic() + deadline_s
    try:
        while done_kills < kills:
            time.sleep(random.uniform(0.2, 2.0))
            scheduler.send_signal(signal.SIGKILL)
            scheduler.wait()
            done_kills += 1
            if docker and not restarted_engine and done_kills == kills // 2:
                restart_dockerd()
                restarted_engine = True
            scheduler = start_scheduler(env)
        while Job.objects.exclude(state__in=FINISHED_JOB_STATES).exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        if fault is not None and fault_rows is not None:  # on an idle cluster: its jobs' own start times
            fault_rows.extend(fault())
        while Job.objects.exclude(state__in=FINISHED_JOB_STATES).exists() and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        scheduler.send_signal(signal.SIGTERM)
        scheduler.wait(timeout=60)
    return done_kills


def double_starts() -> int:
    from jobs.models import TaskAttempt

    paths = set(TaskAttempt.objects.exclude(log_path="").values_list("log_path", flat=True))
    twice = 0
    for path in paths:
        with contextlib.suppress(OSError):
            twice += Path(path).read_text(errors="replace").count("CHAOS-START") > 1
    return twice


def orphans(var: str, docker: bool) -> int:
    if docker:
        import docker as docker_sdk

        count = 0
        for engine in (ENGINE, FROZEN_ENGINE):
            with contextlib.suppress(docker_sdk.errors.DockerException):  # (the second one with --freeze only)
                client = docker_sdk.DockerClient(base_url=engine, timeout=30)
                count += len(client.containers.list(all=True, filters={"label": f"pai.portal={NAMESPACE}"}))
        return count
    count = 0
    servers = {path.read_text() for path in Path(var).glob(f"**/{SERVER_PID_NAME}")}  # the nodes' own, not tasks
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or proc.name in servers:
            continue
        try:  # a task's supervisor and sandbox name its directory; a bare task works in it
            named = var.encode() in (proc / "cmdline").read_bytes()
            if named or os.readlink(proc / "cwd").startswith(var):
                count += 1
        except OSError:
            continue
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--docker", action="store_true")
    parser.add_argument("--freeze", action="store_true", help="with --docker: hang a second engine (SIGSTOP)")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds to wait for every job to end")
    args = parser.parse_args()
    env = setup(args)
    if args.docker:
        nodes = "2" if args.freeze else "1"
        subprocess.run([*CLUSTER, "up", nodes, *CLUSTER_ARGS, "--no-register"], check=True, capture_output=True)
    try:
        report(args, env)
    finally:
        if args.docker:
            subprocess.run([*CLUSTER, "down", "--name", "paichaos"], check=False, capture_output=True)


def report(args: argparse.Namespace, env: dict[str, str]) -> None:
    expected = submit_all(args.jobs, args.docker, args.freeze)
    started = time.perf_counter()
    fault_rows: list[tuple[str, str]] = []
    fault = (lambda: freeze_fault(expected)) if args.docker and args.freeze else None
    kills = run(env, args.kills, args.docker, args.deadline, fault, fault_rows)
    elapsed = time.perf_counter() - started

    from jobs.models import Job
    from jobs.states import FINISHED_JOB_STATES

    states = dict(Job.objects.values_list("name", "state"))
    lost = sum(1 for name in expected if name not in states)
    stranded = sum(1 for state in states.values() if state not in FINISHED_JOB_STATES)
    wrong_names = [
        f"{name} {states[name]}"
        for name, want in expected.items()
        if states.get(name) in FINISHED_JOB_STATES and states[name] != want
    ]
    wrong = f"{len(wrong_names)} {', '.join(wrong_names[:5])}".strip()
    rows = [
        ("database", "PostgreSQL" if args.postgres else "SQLite"),
        ("executor", "docker (its engine stopped and restarted once)" if args.docker else "process"),
        ("jobs submitted", str(len(expected))),
        ("scheduler SIGKILLs", str(kills)),
        ("run time", f"{elapsed:.1f} s"),
        ("jobs lost", str(lost)),
        ("tasks started twice", str(double_starts())),
        ("jobs stranded", str(stranded)),
        ("wrong outcome", wrong),
        ("orphans", str(orphans(env["PAI_VAR_DIR"], args.docker))),
        *fault_rows,
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
