"""Chaos: the scheduler killed with SIGKILL at random moments while jobs run; nothing may be lost,
started twice, stranded or left behind.

    .venv/bin/python bench/chaos.py [--jobs 200] [--kills 20] [--postgres] [--standby]
                                    [--docker [--freeze] [--slow] [--slurm-gone]]
                                    [--slow-readers 64]
                                    [--mail-hang]

A fresh portal (its own var dir; SQLite, or a fresh PostgreSQL database with --postgres) gets a
mix of jobs: ones that succeed, fail (and use their jobRetryCount), fail once then succeed through
taskRetryCount, and two-task gangs. `manage.py runscheduler` runs in a subprocess and is killed
with SIGKILL `--kills` times at random moments (0.2-2 s after it took the lease), each time
restarted at once as the Procfile starts it (no `--id`; the table says how long each restarted one
took to hold the lease, its start-up included: a lease waited out would add up to 6 s). With
`--standby` two schedulers run as two machines' (PAI_MACHINE_NAME chaos-a and chaos-b): each kill
strikes the one holding the lease, the table says how long after it the other machine's standby
held the lease (the lease waited out, as a standby elsewhere must), and the killed one is then
started again as the standby (PostgreSQL, with --postgres, is the two machines' shared database). `--docker`
runs the jobs in containers on a Docker engine of their own (`scripts/dev-cluster.sh up 1`, so the
machine's own engine and its containers are left alone) and also stops and restarts that engine
once mid-run. Then the run goes on until every job is
final. Then, on the idle cluster, each fault asked for strikes in turn (the scheduler left alone):

  --freeze      a second engine's dockerd stopped with SIGSTOP (its containers running on)
  --slow        the second engine's node is registered through a proxy (bench/slow_proxy.py)
                that, for the fault, hands each request to the engine --slow-delay seconds late
                (beyond the scheduler's PAI_NODE_CALL_DEADLINE_SECONDS); answers pass at once
  --slurm-gone  a one-node Slurm dev cluster of the run's own beside the engines (a VC on its
                partition): its slurmctld stopped with SIGSTOP
  --slow-readers N  (any executor) the portal served as `make run` serves it (`manage.py serve`,
                2 workers): N clients download one user's 50 MB task log from the job page
                (masked, streamed) reading 64 bytes a second; another visitor's GET /login/ is
                timed before and while they read (its own table: others' extra wait, errors)
  --mail-hang   (with or without --docker) the portal's mail server (bench/mail_server.py) accepts
                connections and never answers, while another user's jobs ask for mail when they
                run and end, 200 of their mails wait in the outbox and `runsampler` sends it; no
                node is struck (nothing to detect)
  --sweep-stop  a big sweep's stop: two other users' sweeps of --sweep-runs runs each (two runs of
                each running, the rest held) both stopped with Stop all (no --docker needed); its
                row says how long the two Stop all requests took and when every run was stopped,
                and the probes' (another user's jobs) longest extra wait while the stops go on

A fault starts with a job running on the struck nodes (the victim: a two-task gang across both
engines, or a Slurm job) and lasts until they are marked down; then they are healed (SIGCONT, the
proxy fast again) and the run waits for them to be taken back and for every job to end. One-task
probe jobs, submitted one after another, time from submit to start before the fault and while it
lasts. One row per fault: the time to detect, the probes' normal start (median), others' extra
wait (the longest extra wait of a probe that ran on a healthy node), and lost / started twice /
stranded among the fault's own jobs. The first table says:

  lease taken after restart  from a restart to the restarted scheduler holding the lease
  standby took over after    (--standby) from the active one's SIGKILL to the standby holding the lease
  jobs lost          submitted but with no row
  tasks started twice  one task attempt whose log shows two starts
  jobs stranded      not final when the run ended
  wrong outcome      final, but not what the job's command implies
  orphans            task processes / containers left after the last job ended
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.mail_server import MailServer  # noqa: E402
from bench.postgres import own_database  # noqa: E402
from bench.slow_proxy import SlowProxy  # noqa: E402
from bench.throughput import own_loopback_address  # noqa: E402
from clusters.executors.supervise import SERVER_PID_NAME  # noqa: E402

RUN_ID = uuid.uuid4().hex[:6]
NAMESPACE = f"paichaos{RUN_ID}"
CLUSTER = ["bash", str(ROOT / "scripts" / "dev-cluster.sh")]
NODE_CPUS = 8
# The faults' jobs: unrelated one-task probes, and a victim gang whose two tasks (over half a
# node's CPUs each) run one on each node.
PROBE_JOBS = 5
VICTIM_CPUS = 5
# How long a fault may last without its node being marked down (then the row says so).
DETECT_LIMIT_S = 60.0
STRUCK_NODE = "chaos-2"
SLURM_VC = "slurm"

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


@dataclass
class DevCluster:
    """This run's own scripts/dev-cluster.sh cluster: its name and subnet are its own, so another
    run's cluster may be up beside it."""

    name: str
    prefix: str  # the subnet's first three octets
    state_dir: str = ""  # PAI_DEV_CLUSTER_DIR ('' for the script's own)
    output: str = ""  # what `up` printed

    @classmethod
    def up(
        cls, name: str, nodes: int, *options: str, state_dir: str = "", cpus: int = NODE_CPUS, memory_mb: int = 8192
    ) -> DevCluster:
        """(A Slurm node may claim no more CPUs than the machine has: slurmd calls it invalid.)"""
        error = ""
        for _ in range(8):  # a random /24 until one is free on this machine
            cluster = cls(f"{name}{RUN_ID[:4]}", f"10.{random.randint(200, 254)}.{random.randint(0, 255)}", state_dir)
            args = ["--subnet", f"{cluster.prefix}.0/24", "--cpus", str(cpus), "--memory-mb", str(memory_mb)]
            done = cluster.run("up", str(nodes), *args, *options, "--no-register", check=False)
            if done.returncode == 0:
                cluster.output = done.stdout.decode()
                return cluster
            error = done.stderr.decode(errors="replace")
            cluster.run("down", check=False)
            if "in use" not in error:
                break
        raise SystemExit(f"dev-cluster.sh up failed: {error}")

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        env = {**os.environ, **({"PAI_DEV_CLUSTER_DIR": self.state_dir} if self.state_dir else {})}
        return subprocess.run([*CLUSTER, *args, "--name", self.name], check=check, capture_output=True, env=env)

    @property
    def slurm_conf(self) -> str:
        return self.output.splitlines()[-1].removeprefix("SLURM_CONF=")

    def signal_slurmctld(self, signal_number: int) -> None:
        os.kill(int((Path(self.state_dir) / self.name / "slurm" / "run" / "slurmctld.pid").read_text()), signal_number)

    def engine(self, index: int) -> str:
        return f"unix:///run/pai-dev-cluster/{self.name}/{index}/docker.sock"

    def address(self, index: int) -> str:
        return f"{self.prefix}.{index + 1}"


def setup(args: argparse.Namespace, var: Path, slurm: DevCluster | None) -> dict[str, str]:
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
    if not args.postgres:  # (else DATABASE_URL, main's own_database)
        env["PAI_SQLITE_PATH"] = str(var / "db.sqlite3")
    if slurm is not None:
        env.update(PAI_SLURM_CONF=slurm.slurm_conf, PAI_SLURM_NODES_SECONDS="0.5", PAI_SLURM_JOB_PREFIX=NAMESPACE)
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if slurm is not None:
        call_command("createvc", SLURM_VC, "--slurm-partition", slurm.name, stdout=io.StringIO())
    return env


def tear_down(env: dict[str, str]) -> None:
    """What setup made goes: the var dir (main's own_database drops the PostgreSQL database)."""
    shutil.rmtree(env["PAI_VAR_DIR"], ignore_errors=True)


def submit_all(count: int, cluster: DevCluster | None, engines: list[str]) -> dict[str, str]:
    """The nodes (one per engine, chaos-1, chaos-2, ...; a process node without a cluster) and the jobs."""
    from django.contrib.auth import get_user_model

    from clusters.models import Node
    from jobs.actions import submit_job

    for index, engine in enumerate(engines, start=1):
        assert cluster is not None
        Node.objects.create(
            name=f"chaos-{index}",
            executor="docker",
            docker_url=engine,
            address=cluster.address(index),
            cpus=NODE_CPUS,
            memory_mb=8192,
        )
    if len(engines) < 2:
        # (its own loopback address: a test suite's tasks on 127.0.0.2 would hold the ports placement hands out)
        Node.objects.create(
            name="local", executor="process", address=own_loopback_address(), cpus=NODE_CPUS, memory_mb=8192
        )
    user = get_user_model().objects.create_user("chaos", password="chaos-password-1")
    expected = {}
    # A task retry starts a new container, whose files start afresh: the "retries" kind's marker
    # file lives only on the process executor's work dir.
    kinds = [kind for kind in MIX if not (engines and kind == "retries")]
    for i in range(count):
        kind = kinds[i % len(kinds)]
        roles, job_retries, outcome = MIX[kind]
        name = f"{kind}-{i}"
        submit_job(user, CONFIG.format(name=name, job_retries=job_retries, roles=roles))
        expected[name] = outcome
    return expected


def start_scheduler(env: dict[str, str], machine: str = "") -> subprocess.Popen[bytes]:
    """A scheduler as the Procfile starts it; on `machine` (PAI_MACHINE_NAME) where named, and
    then only once its loop runs (a standby still starting would add its start-up to a takeover)."""
    command = [sys.executable, "manage.py", "runscheduler"]
    if not machine:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = Path(env["PAI_VAR_DIR"]) / f"scheduler-{machine}-{uuid.uuid4().hex[:6]}.log"
    env = {**env, "PAI_MACHINE_NAME": machine, "PAI_LOG_LEVEL": "INFO"}
    with log.open("wb") as out:
        scheduler = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=out)
    deadline = time.monotonic() + 60
    while b"pai.scheduler: scheduler " not in log.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.05)  # ("scheduler <holder> started", logged as its loop begins)
    return scheduler


STANDBY_MACHINES = ["chaos-a", "chaos-b"]


def holder_machine(holder: str) -> str:
    from scheduling.lease import Holder

    parsed = Holder.parse(holder)
    return parsed.host if parsed is not None else ""


def lease_holder() -> str:
    from clusters.models import SchedulerLease
    from scheduling.lease import LEASE_NAME

    return SchedulerLease.objects.filter(name=LEASE_NAME).values_list("holder", flat=True).first() or ""


def takeover(previous: str, timeout: float = 60.0) -> float:
    """Seconds until a scheduler other than `previous` holds the lease (`timeout` if none did)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        holder = lease_holder()
        if holder and holder != previous:
            return time.monotonic() - started
        time.sleep(0.02)
    return timeout


def submit(name: str, roles: str, job_retries: int, outcome: str, expected: dict[str, str]) -> int:
    from django.contrib.auth import get_user_model

    from jobs.actions import submit_job

    user = get_user_model().objects.get(username="chaos")
    job = submit_job(user, CONFIG.format(name=name, job_retries=job_retries, roles=roles))
    expected[name] = outcome
    return int(job.pk)


def start_delays(prefix: str, expected: dict[str, str], timeout: float = 60.0) -> list[tuple[float, str]]:
    """PROBE_JOBS one-task jobs, one after another (each once the last one started): for each,
    the seconds from its submit to its task's start, and its node."""
    from jobs.models import Task

    roles, job_retries, outcome = MIX["succeeds"]
    delays = []
    for i in range(PROBE_JOBS):
        job = submit(f"probe-{prefix}-{i}", roles, job_retries, outcome, expected)
        deadline = time.monotonic() + timeout
        delay = (timeout, "none")
        while time.monotonic() < deadline:
            task = Task.objects.filter(job=job, started_at__isnull=False).select_related("job", "node").first()
            if task is not None and task.started_at is not None:
                delay = ((task.started_at - task.job.created_at).total_seconds(), task.node.name if task.node else "")
                break
            time.sleep(0.05)
        delays.append(delay)
    return delays


def start_gang_victim(key: str, expected: dict[str, str]) -> str:
    """A gang with a task on each node, running when the fault strikes."""
    from jobs.models import Task
    from jobs.states import TaskState

    name = f"victim-{key}"
    role = ROLE.format(name="worker", instances=2, extra="", command=f'"{START}; sleep 6"')
    job = submit(name, role.replace("cpu: 1,", f"cpu: {VICTIM_CPUS},"), 1, "SUCCEEDED", expected)
    deadline = time.monotonic() + 60
    while Task.objects.filter(job=job, state=TaskState.RUNNING).count() < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    return name


@dataclass
class Fault:
    key: str
    label: str
    strike: Callable[[], object]
    heal: Callable[[], object]
    victim: Callable[[str, dict[str, str]], str]  # starts a job on the struck nodes: its name
    struck: dict[str, str]  # the struck nodes: a filter of Node rows
    # A fault that is no node's: it strikes and measures itself (its row's "detected" says its own).
    row: Callable[[dict[str, str], float], FaultRow] | None = None


def struck_nodes(fault: Fault) -> tuple[list[str], bool]:
    """The struck nodes' names, and whether every one is down (none struck: a fault of no node)."""
    from clusters.models import Node

    if not fault.struck:
        return [], False
    nodes = dict(Node.objects.filter(**fault.struck).values_list("name", "down_since"))
    return list(nodes), bool(nodes) and all(since is not None for since in nodes.values())


def start_slurm_victim(key: str, expected: dict[str, str]) -> str:
    """A Slurm job running when the controller goes."""
    from jobs.models import Task
    from jobs.states import TaskState

    name = f"victim-{key}"
    roles, _, outcome = MIX["succeeds"]
    roles = roles.replace("sleep 0.3", "sleep 6")
    config = CONFIG.format(name=name, job_retries=1, roles=roles).replace(
        "taskRoles:", f"defaults: {{virtualCluster: {SLURM_VC}}}\ntaskRoles:"
    )
    from django.contrib.auth import get_user_model

    from jobs.actions import submit_job

    job = submit_job(get_user_model().objects.get(username="chaos"), config)
    expected[name] = outcome
    deadline = time.monotonic() + 60
    while not Task.objects.filter(job=job, state=TaskState.RUNNING).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return name


@dataclass
class FaultRow:
    label: str
    detected: str
    normal: float
    extra: str
    lost: int
    twice: int
    stranded: int


def strike(fault: Fault, expected: dict[str, str], deadline_s: float) -> FaultRow:
    """One fault on the struck node while the victim runs, until the node is down; healed, the
    run waits for the node to be taken back and every job to end."""
    from datetime import UTC, datetime

    from django.db.models import Max

    from clusters.models import Node

    if fault.row is not None:
        return fault.row(expected, deadline_s)
    names = [fault.victim(fault.key, expected)]
    before = start_delays(f"{fault.key}-before", expected)
    normal = sorted(delay for delay, _ in before)[PROBE_JOBS // 2]
    struck_at = datetime.now(UTC)
    fault.strike()
    try:
        during = start_delays(f"{fault.key}-during", expected)
        limit = time.monotonic() + DETECT_LIMIT_S
        struck, down = struck_nodes(fault)
        while fault.struck and not down and time.monotonic() < limit:
            time.sleep(0.05)
            struck, down = struck_nodes(fault)
        # (the last of them to go down)
        down_since = Node.objects.filter(**fault.struck).aggregate(last=Max("down_since"))["last"] if down else None
    finally:
        fault.heal()
    down_after = os.environ["PAI_NODE_DOWN_AFTER_SECONDS"]
    if down_since is not None:
        detected = f"{(down_since - struck_at).total_seconds():.1f} s (down after {down_after} s)"
    elif not fault.struck:
        detected = "- (no node struck)"
    else:
        detected = f"not in {DETECT_LIMIT_S:.0f} s"
    names += [f"probe-{fault.key}-{when}-{i}" for when in ("before", "during") for i in range(PROBE_JOBS)]
    wait_idle(time.monotonic() + deadline_s, fault.struck or None)
    unrelated = [delay for delay, on in during if on not in struck]
    on_struck = len(during) - len(unrelated)
    extra = f"{max(0.0, max(unrelated) - normal):.2f} s" if unrelated else "-"
    if on_struck:
        extra += f" ({on_struck} of {PROBE_JOBS} probes on the struck node)"
    lost, stranded = outcome_counts(names)
    return FaultRow(fault.label, detected, normal, extra, lost, double_starts(names), stranded)


def wait_idle(deadline: float, struck: dict[str, str] | None = None) -> None:
    """Until every job is final (and, after a fault, the struck nodes are taken back)."""
    from clusters.models import Node
    from jobs.models import Job
    from jobs.states import FINISHED_JOB_STATES

    while time.monotonic() < deadline:
        busy = Job.objects.exclude(state__in=FINISHED_JOB_STATES).exists()
        down = struck is not None and Node.objects.filter(**struck, down_since__isnull=False).exists()
        if not busy and not down:
            return
        time.sleep(0.2)


def kill_scheduler(
    env: dict[str, str],
    kills: int,
    cluster: DevCluster | None,
    deadline_s: float,
    faults: list[Fault],
    expected: dict[str, str],
    standby: bool = False,
) -> tuple[int, list[float], list[FaultRow]]:
    """SIGKILL the scheduler `kills` times (the first engine stopped and restarted half way), wait
    for the jobs to end, then strike each fault in turn with the scheduler left alone. Also returns
    how long each restarted scheduler took to hold the lease, or with `standby` how long the other
    machine's scheduler took after the kill (the killed one then started again as the standby)."""
    machines = STANDBY_MACHINES if standby else [""]
    schedulers = {machines[0]: start_scheduler(env, machines[0])}
    takeover("")
    for machine in machines[1:]:  # (started once the first holds the lease: they wait)
        schedulers[machine] = start_scheduler(env, machine)
    done_kills = 0
    takeovers = []
    restarted_engine = False
    rows = []
    try:
        while done_kills < kills:
            time.sleep(random.uniform(0.2, 2.0))
            killed = lease_holder()
            machine = holder_machine(killed) if standby else ""
            schedulers[machine].send_signal(signal.SIGKILL)
            schedulers[machine].wait()
            done_kills += 1
            if cluster is not None and not restarted_engine and done_kills == kills // 2:
                cluster.run("stop-node", "1")
                time.sleep(1)
                cluster.run("start-node", "1")
                restarted_engine = True
            if standby:  # the standby takes over; the killed one comes back as the next standby
                takeovers.append(takeover(killed))
                schedulers[machine] = start_scheduler(env, machine)
            else:
                schedulers[machine] = start_scheduler(env)
                takeovers.append(takeover(killed))
        wait_idle(time.monotonic() + deadline_s)
        rows = [strike(fault, expected, deadline_s) for fault in faults]
    finally:
        for scheduler in schedulers.values():
            scheduler.send_signal(signal.SIGTERM)
        for scheduler in schedulers.values():
            scheduler.wait(timeout=60)
    return done_kills, takeovers, rows


def double_starts(names: list[str] | None = None) -> int:
    from jobs.models import TaskAttempt

    attempts = TaskAttempt.objects.exclude(log_path="")
    if names is not None:
        attempts = attempts.filter(job__name__in=names)
    twice = 0
    for path in set(attempts.values_list("log_path", flat=True)):
        with contextlib.suppress(OSError):
            twice += Path(path).read_text(errors="replace").count("CHAOS-START") > 1
    return twice


def outcome_counts(names: list[str]) -> tuple[int, int]:
    """(lost, stranded) among these jobs: no row; not final."""
    from jobs.models import Job
    from jobs.states import FINISHED_JOB_STATES

    states = dict(Job.objects.filter(name__in=names).values_list("name", "state"))
    lost = sum(1 for name in names if name not in states)
    return lost, sum(1 for state in states.values() if state not in FINISHED_JOB_STATES)


def orphans(var: str, engines: list[str]) -> int:
    if engines:
        import docker as docker_sdk

        count = 0
        for engine in engines:
            with contextlib.suppress(docker_sdk.errors.DockerException):
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
    parser.add_argument("--standby", action="store_true", help="two machines' schedulers: the standby takes over")
    parser.add_argument("--docker", action="store_true")
    parser.add_argument("--freeze", action="store_true", help="with --docker: hang a second engine (SIGSTOP)")
    parser.add_argument("--slow", action="store_true", help="with --docker: make a second engine answer late")
    parser.add_argument("--slow-delay", type=float, default=3.0, help="seconds each request is held (--slow)")
    parser.add_argument("--slurm-gone", action="store_true", help="with --docker: hang a Slurm controller (SIGSTOP)")
    parser.add_argument("--mail-hang", action="store_true", help="a mail server that accepts and never answers")
    parser.add_argument("--sweep-stop", action="store_true", help="two other users' big sweeps stopped at once")
    parser.add_argument("--sweep-runs", type=int, default=10_000, help="runs of each sweep (--sweep-stop)")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds to wait for every job to end")
    parser.add_argument("--slow-readers", type=int, default=0, help="clients reading a big log 64 bytes a second")
    args = parser.parse_args()
    if (args.freeze or args.slow or args.slurm_gone) and not args.docker:
        parser.error("--freeze, --slow and --slurm-gone go with --docker")
    var = Path(tempfile.mkdtemp(prefix="pai-chaos-"))
    env: dict[str, str] = {"PAI_VAR_DIR": str(var)}
    try:
        with contextlib.ExitStack() as stack:
            if args.postgres:
                stack.enter_context(own_database(f"chaos_{RUN_ID}"))
            slurm = stack.enter_context(slurm_cluster(var)) if args.slurm_gone else None
            mail = stack.enter_context(mail_server()) if args.mail_hang else None  # (named in setup's env)
            env = setup(args, var, slurm)
            cluster, engines, faults = stack.enter_context(dev_cluster(args, var))
            if slurm is not None:
                faults.append(slurm_fault(slurm))
            if mail is not None:
                faults.append(mail_fault(mail, env))
            if args.sweep_stop:
                faults.append(sweep_stop_fault(args.sweep_runs))
            report(args, env, cluster, engines, faults)
    finally:
        tear_down(env)


@contextlib.contextmanager
def slurm_cluster(var: Path) -> Iterator[DevCluster]:
    """A one-node Slurm dev cluster of this run's own (its state under the var dir), down after."""
    cpus = min(NODE_CPUS, os.cpu_count() or 1)
    cluster = DevCluster.up("cs", 1, "--slurm", state_dir=str(var / "slurm-cluster"), cpus=cpus, memory_mb=4000)
    try:
        yield cluster
    finally:
        cluster.signal_slurmctld(signal.SIGCONT)  # (its jobs are cancelled before the daemons go)
        cluster.run("down", check=False)


def slurm_fault(slurm: DevCluster) -> Fault:
    return Fault(
        "slurm",
        "Slurm controller gone (SIGSTOP)",
        lambda: slurm.signal_slurmctld(signal.SIGSTOP),
        lambda: slurm.signal_slurmctld(signal.SIGCONT),
        start_slurm_victim,
        {"executor": "slurm"},
    )


# ---- a hung mail server (--mail-hang) ---------------------------------------------------------------
MAILER = "mailer"  # the user whose jobs ask for mail (the probes are another user's)
MAILER_JOBS = 6  # submitted as the server hangs (with the victim, 7 CPUs: the probes keep one)
WAITING_MAILS = 200
MAILED = "extras:\n  jobStatusChangeNotification: {running: true, succeeded: true, failed: true}\n"


@contextlib.contextmanager
def mail_server() -> Iterator[MailServer]:
    """A mail server of this run's own, named to the portal's processes (setup copies the env)."""
    server = MailServer().start()
    os.environ.update(PAI_EMAIL_HOST=server.host, PAI_EMAIL_PORT=str(server.port))
    try:
        yield server
    finally:
        server.stop()


def mail_fault(server: MailServer, env: dict[str, str]) -> Fault:
    """While the server stalls: the mailer's jobs change state (each change a mail), 200 of their
    mails wait, and `runsampler` (the outbox's sender) runs, for the fault's length."""
    runs: dict[str, dict[str, str]] = {}  # the victim hands strike the run's expected outcomes
    sampler: list[subprocess.Popen[bytes]] = []

    def victim(key: str, expected: dict[str, str]) -> str:
        runs["expected"] = expected
        name = f"victim-{key}"
        job_id = submit_mailed(name, "sleep 6", expected)
        wait_running(job_id)
        return name

    def strike() -> None:
        from django.contrib.auth import get_user_model

        from jobs import outbox

        server.hang = True
        mailer = get_user_model().objects.get(username=MAILER)
        for i in range(WAITING_MAILS):
            outbox.mail(mailer, f"[PAI] Notice {i}", f"Notice {i}.\n", event="succeeded")
        command = [sys.executable, "manage.py", "runsampler"]
        sampler.append(
            subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
        for i in range(MAILER_JOBS):
            submit_mailed(f"mailed-{i}", "sleep 0.3", runs["expected"])

    def heal() -> None:
        server.hang = False
        for process in sampler:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)

    return Fault("mail", "hung mail server (accepts, never answers)", strike, heal, victim, {})


def submit_mailed(name: str, command: str, expected: dict[str, str]) -> int:
    """One of the mailer's jobs, asking for mail when it runs and when it ends."""
    from django.contrib.auth import get_user_model

    from jobs.actions import submit_job

    users = get_user_model().objects
    mailer = users.filter(username=MAILER).first() or users.create_user(MAILER, f"{MAILER}@example.org", "chaos-pw-1")
    roles = ROLE.format(name="main", instances=1, extra="", command=f'"{START}; {command}"')
    job = submit_job(mailer, CONFIG.format(name=name, job_retries=0, roles=roles) + MAILED)
    expected[name] = "SUCCEEDED"
    return int(job.pk)


def wait_running(job_id: int, timeout: float = 60.0) -> None:
    from jobs.models import Task
    from jobs.states import TaskState

    deadline = time.monotonic() + timeout
    while not Task.objects.filter(job_id=job_id, state=TaskState.RUNNING).exists() and time.monotonic() < deadline:
        time.sleep(0.1)


SWEEPERS = ("sweeper-1", "sweeper-2")
SWEEP_RUNNING = 2  # runs of each sweep running when it is stopped (maxConcurrent)
SWEEP_CONFIG = """protocolVersion: 2
name: big
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: pai-portal/base:latest}}
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 256, gpu: 0}}
    commands:
      - "{start}; sleep 600"
extras:
  sweep: {{array: '0-{last}', maxConcurrent: {running}}}
"""


def sweep_stop_fault(runs: int) -> Fault:
    """A big sweep's stop: its own row (no node is struck)."""
    label = f"a big sweep's stop (2 users x {runs:,} runs)"
    return Fault(
        "sweep-stop", label, object, object, start_gang_victim, {}, row=lambda e, d: sweep_stop_row(runs, e, d)
    )


def sweep_stop_row(runs: int, expected: dict[str, str], deadline_s: float) -> FaultRow:
    """Two users' sweeps, each with SWEEP_RUNNING runs running, stopped with Stop all one after the
    other; the probes (the chaos user's) time their starts before and while the stops go on."""
    from django.contrib.auth import get_user_model

    from jobs.models import Job
    from jobs.states import FINISHED_JOB_STATES, JobState
    from jobs.sweeps import stop_sweep, submit_sweep

    sweeps = []
    for name in SWEEPERS:
        owner = get_user_model().objects.create_user(name, password=f"{name}-password-1")
        text = SWEEP_CONFIG.format(start=START, last=runs - 1, running=SWEEP_RUNNING)
        sweeps.append((owner, submit_sweep(owner, text)))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if Job.objects.filter(sweep__isnull=False, state=JobState.RUNNING).count() >= SWEEP_RUNNING * len(sweeps):
            break
        time.sleep(0.2)
    before = start_delays("sweep-stop-before", expected)
    normal = sorted(delay for delay, _ in before)[PROBE_JOBS // 2]
    began = time.monotonic()
    for owner, sweep in sweeps:
        stop_sweep(sweep, owner)
    asked_s = time.monotonic() - began
    during = start_delays("sweep-stop-during", expected)
    unfinished = Job.objects.filter(sweep__isnull=False).exclude(state__in=FINISHED_JOB_STATES)
    limit = time.monotonic() + deadline_s
    while unfinished.exists() and time.monotonic() < limit:
        time.sleep(0.2)
    stopped = f"all stopped {time.monotonic() - began:.1f} s after" if not unfinished.exists() else "not all stopped"
    names = [f"probe-sweep-stop-{when}-{i}" for when in ("before", "during") for i in range(PROBE_JOBS)]
    wait_idle(time.monotonic() + deadline_s)
    extra = f"{max(0.0, max(delay for delay, _ in during) - normal):.2f} s"
    lost, stranded = outcome_counts(names)
    run_names = list(Job.objects.filter(sweep__isnull=False).values_list("name", flat=True))
    stranded += unfinished.count()
    return FaultRow(
        fault_label(runs),
        f"Stop all x2: {asked_s:.2f} s; {stopped}",
        normal,
        extra,
        lost,
        double_starts(names + run_names),
        stranded,
    )


def fault_label(runs: int) -> str:
    return f"a big sweep's stop (2 users x {runs:,} runs)"


@contextlib.contextmanager
def dev_cluster(args: argparse.Namespace, var: Path) -> Iterator[tuple[DevCluster | None, list[str], list[Fault]]]:
    """This run's cluster (with --docker), the engines its nodes are registered with, the faults;
    taken down after, the slow proxy with it."""
    if not args.docker:
        yield None, [], []
        return
    faulty = args.freeze or args.slow
    cluster = DevCluster.up("chaos", 2 if faulty else 1)
    proxy = None
    try:
        engines = [cluster.engine(1)] + ([cluster.engine(2)] if faulty else [])
        faults = []
        struck = {"name": STRUCK_NODE}
        if args.freeze:
            freeze, thaw = (lambda: cluster.run("freeze-node", "2")), (lambda: cluster.run("thaw-node", "2"))
            faults.append(Fault("frozen", "frozen engine (SIGSTOP)", freeze, thaw, start_gang_victim, struck))
        if args.slow:
            proxy = SlowProxy(var / "slow-engine.sock", cluster.engine(2))
            proxy.start()
            engines[1] = proxy.url
            slow = proxy

            def slow_down() -> None:
                slow.delay = args.slow_delay

            def speed_up() -> None:
                slow.delay = 0.0

            label = f"slow engine (+{args.slow_delay:g} s a request)"
            faults.append(Fault("slow", label, slow_down, speed_up, start_gang_victim, struck))
        yield cluster, engines, faults
    finally:
        if proxy is not None:
            proxy.stop()
        cluster.run("down", check=False)


def report(
    args: argparse.Namespace, env: dict[str, str], cluster: DevCluster | None, engines: list[str], faults: list[Fault]
) -> None:
    expected = submit_all(args.jobs, cluster, engines)
    started = time.perf_counter()
    kills, takeovers, fault_rows = kill_scheduler(
        env, args.kills, cluster, args.deadline, faults, expected, standby=args.standby
    )
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
    if wrong_names:  # why the first one ended so
        said = Job.objects.filter(name=wrong_names[0].split()[0]).values_list("exit_diagnostics", flat=True).first()
        wrong += f" (first: {' '.join((said or '').split())[:160]})"
    rows = [
        ("database", "PostgreSQL" if args.postgres else "SQLite"),
        ("executor", "docker (its engine stopped and restarted once)" if engines else "process"),
        ("jobs submitted", str(len(expected))),
        ("scheduler SIGKILLs", str(kills)),
        (
            "standby took over after" if args.standby else "lease taken after restart",
            taken_after(takeovers, args.standby),
        ),
        ("run time", f"{elapsed:.1f} s"),
        ("jobs lost", str(lost)),
        ("tasks started twice", str(double_starts())),
        ("jobs stranded", str(stranded)),
        ("wrong outcome", wrong),
        ("orphans", str(orphans(env["PAI_VAR_DIR"], engines))),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if fault_rows:
        print()
        print_faults(fault_rows)
    if args.slow_readers:
        print()
        print_reader_faults([slow_log_readers(args.slow_readers, env)])


def taken_after(takeovers: list[float], standby: bool = False) -> str:
    from bench.served import percentile
    from scheduling.lease import LEASE_TTL

    if not takeovers:
        return "-"
    ttl = LEASE_TTL.total_seconds()
    how = "the kill, by another machine's standby" if standby else "restart, no --id, as the Procfile"
    return (
        f"median {statistics.median(takeovers):.1f} s, p95 {percentile(takeovers, 0.95):.1f} s, "
        f"max {max(takeovers):.1f} s "
        f"(after {how}; the lease lasts {ttl:g} s)"
    )


def print_faults(rows: list[FaultRow]) -> None:
    header = ("fault", "detected after", "normal start", "others' extra wait", "lost", "twice", "stranded")
    cells = [header] + [
        (row.label, row.detected, f"{row.normal:.2f} s", row.extra, str(row.lost), str(row.twice), str(row.stranded))
        for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    for line in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())


# ---- slow log readers: the served portal, not the scheduler ----------------------------------------
READER_LOG_BYTES = 50 * 1024 * 1024
READER_BYTES_PER_S = 64
READER_RECEIVE_BUFFER = 4096
OTHERS_SECONDS = 15.0  # /login/ timed this long before the readers, and again while they read
OTHERS_TIMEOUT_S = 10.0


@dataclass
class ReaderRow:
    label: str
    readers: int
    answered: int  # readers whose download started (200)
    normal: float  # others' p99 before
    during: float  # others' p99 while they read
    requests: int  # others' requests while they read
    errors: int  # of those, not answered 200 within OTHERS_TIMEOUT_S (their wait counts until then)


def slow_log_readers(count: int, env: dict[str, str]) -> ReaderRow:
    """`count` clients read one user's task log from the job page at READER_BYTES_PER_S; another
    visitor's sign-in page is timed before and meanwhile."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from bench.served import percentile, served, served_env
    from jobs.actions import submit_job

    user = get_user_model().objects.get_or_create(username="chaos")[0]
    roles, job_retries, _ = MIX["succeeds"]
    job = submit_job(user, CONFIG.format(name="slow-readers-log", job_retries=job_retries, roles=roles))
    var = Path(env["PAI_VAR_DIR"])
    log = var / "slow-readers.log"
    line = b"step 000000: loss 0.1234 accuracy 0.9876 lr 0.0001 -- the usual training output\n"
    with log.open("wb") as out:
        for _ in range(READER_LOG_BYTES // len(line)):
            out.write(line)
    job.tasks.update(log_path=str(log))
    browser = Client()
    browser.force_login(user)
    request = (
        f"GET /jobs/{job.full_name}/log/download HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Cookie: {settings.SESSION_COOKIE_NAME}={browser.cookies[settings.SESSION_COOKIE_NAME].value}\r\n\r\n"
    ).encode()
    with served(var, served_env(var, base=env), workers=2) as (port, _pids):
        normal, _ = _time_sign_ins(port, OTHERS_SECONDS)
        stop = threading.Event()
        answered: list[bool] = []
        readers = [threading.Thread(target=_read_slowly, args=(port, request, stop, answered)) for _ in range(count)]
        for reader in readers:
            reader.start()
        time.sleep(2)  # every download started, the server's buffers for them full
        during, errors = _time_sign_ins(port, OTHERS_SECONDS)
        stop.set()
        for reader in readers:
            reader.join()
    return ReaderRow(
        "slow log readers",
        count,
        sum(answered),
        percentile(normal, 0.99),
        percentile(during, 0.99),
        len(during),
        errors,
    )


def _read_slowly(port: int, request: bytes, stop: threading.Event, answered: list[bool]) -> None:
    with contextlib.suppress(OSError), socket.socket() as reader:
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, READER_RECEIVE_BUFFER)
        reader.settimeout(OTHERS_TIMEOUT_S)
        reader.connect(("127.0.0.1", port))
        reader.sendall(request)
        first = reader.recv(READER_BYTES_PER_S)
        answered.append(first.startswith(b"HTTP/1.1 200"))
        while not stop.wait(1.0) and reader.recv(READER_BYTES_PER_S):
            pass


def _time_sign_ins(port: int, seconds: float) -> tuple[list[float], int]:
    """For `seconds`: the seconds each GET /login/ (a fresh connection each) took, answered or not,
    and how many were not answered 200 (within OTHERS_TIMEOUT_S)."""
    times, errors = [], 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        began = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=OTHERS_TIMEOUT_S)
        try:
            connection.request("GET", "/login/")
            answer = connection.getresponse()
            answer.read()
            errors += answer.status != 200
        except (OSError, http.client.HTTPException):
            errors += 1
        finally:
            connection.close()
        times.append(time.perf_counter() - began)
        time.sleep(0.05)
    return times, errors


def print_reader_faults(rows: list[ReaderRow]) -> None:
    header = ("fault", "readers (answered)", "others' normal wait (p99)", "others' extra wait (p99)", "errors")
    cells = [header] + [
        (
            row.label,
            f"{row.readers} ({row.answered})",
            f"{row.normal * 1000:.0f} ms",
            f"{max(0.0, row.during - row.normal) * 1000:.0f} ms",
            f"{row.errors} of {row.requests}",
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    for line in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
