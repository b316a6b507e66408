"""Submit -> SUCCEEDED throughput of trivial one-task jobs (`true`) on the process executor, with
the real scheduler loop, beside a real one-node Slurm on the same machine with the same slots.

    .venv/bin/python bench/throughput.py [N] [--slots S]      (default N=200, S = the machine's CPUs)
    .venv/bin/python bench/throughput.py [N] --slurm          (root; slurm-wlm and munge)

--slots declares S CPU slots for both systems (the portal's node and slurm-local.sh's
SLURM_LOCAL_CPUS), so the schedulers are compared at equal slots on a small machine. The portal's
node gets a loopback address of its own (--address; default: a random one in 127/8), so that its
tasks' ports never meet another run's or a test suite's on 127.0.0.2. CPU per job, as far as the
machine lets it be counted (bench/cpu.py): the submits, the scheduler, and what runs outside it
(each task's supervisor, sandbox, network and command). --json FILE writes the figures.

Our figure: N jobs submitted through jobs.actions.submit_job, then the scheduler's passes run
as `runscheduler` runs them (back to back while busy, its idle wait between idle passes:
PAI_SCHEDULER_INTERVAL, or --interval S) until every job has SUCCEEDED. Slurm's figure
comes from ../shared/tools/slurm-local.sh (slurmctld + slurmd + munge from Debian's packages).

--slurm: the portal ON Slurm against Slurm alone, on one dev cluster (`scripts/dev-cluster.sh up 3
--slurm`, 2 CPUs a node), in --rounds R rounds (default 4) after a few warm-up jobs, each system
first in every other round (the first jobs on fresh slurmds are slower, and the order matters on a
busy machine). Raw: N `sbatch --wrap 'srun true'` (one step, as the portal's jobs have; `sleep S`
with --job-seconds S) until Slurm has ended them all. Portal: N jobs of a VC on the partition,
submitted through submit_job, the scheduler's passes back to back (its idle wait between them, as
`runscheduler`) until every job has SUCCEEDED. The portal's overhead is its end-to-end time over
Slurm's (goal: at most +10 %); the median ms of each step of a portal job (from its job
directory's file times) say where a job's time goes.
"""

import argparse
import atexit
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import slurm_local  # noqa: E402
from bench.cpu import TreeCpu  # noqa: E402

JOB_TEXT = (
    "protocolVersion: 2\nname: {name}\ntype: job\n"
    "prerequisites:\n  - {{name: image, type: dockerimage, uri: pai-portal/base:latest}}\n"
    "taskRoles:\n  main:\n    instances: 1\n    dockerImage: image\n"
    "    resourcePerInstance: {{cpu: 1, memoryMB: 512, gpu: 0}}\n    commands: ['{command}']\n"
)


def setup_django(**env: str) -> None:
    # (In the portal's own var/, as `make run` keeps its state: not /tmp, where a new directory
    # took 0.25-0.9 ms on the box measured, against 0.03 ms elsewhere on the same filesystem.)
    (ROOT / "var").mkdir(exist_ok=True)
    var = Path(tempfile.mkdtemp(prefix="bench-throughput-", dir=ROOT / "var"))
    atexit.register(shutil.rmtree, var, ignore_errors=True)  # (its database and the tasks' files)
    os.environ.update(PAI_VAR_DIR=str(var), PAI_SQLITE_PATH=str(var / "db.sqlite3"), PAI_LOG_LEVEL="WARNING", **env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from clusters.executors.netns import open_tun_to_users

    if note := open_tun_to_users():  # (as `make run` and `addnode` do: else no sandboxed task gets a network)
        print(note, file=sys.stderr)


def own_loopback_address() -> str:
    """A loopback address of this run's own: another run's tasks (or a test suite's, on
    127.0.0.2) hold ports there that placement would hand out again here."""
    return f"127.0.{random.randint(100, 254)}.{random.randint(2, 254)}"


def run_portal(n: int, slots: int, address: str, interval: float | None) -> tuple[float, float, dict[str, float]]:
    """(submit jobs/s, end-to-end jobs/s, CPU ms per job by part: {} where not measurable). The
    scheduler waits `interval` between idle passes (None: as runscheduler, PAI_SCHEDULER_INTERVAL)."""
    setup_django()
    from django.conf import settings

    from clusters.executors.supervise import SERVER_PID_NAME
    from clusters.models import Node

    Node.objects.create(name="local", executor="process", cpus=slots, memory_mb=slots * 1024, address=address)
    tree = TreeCpu.start()
    cpu: dict[str, float] = {}
    try:
        idle_sleep = settings.PAI_SCHEDULER_INTERVAL if interval is None else interval
        submit_rate, rate = submit_and_run(n, JOB_TEXT, idle_sleep=idle_sleep, cpu=cpu, tree=tree)
    finally:
        if tree is not None:
            server = Path(settings.PAI_WORK_ROOT) / "process" / SERVER_PID_NAME
            leftovers = [int(server.read_text())] if server.exists() else []
            tree.close(leftovers)  # (the idle supervisor server would stay 30 s)
    return submit_rate, rate, cpu


def submit_and_run(
    n: int,
    text: str,
    idle_sleep: float,
    command: str = "true",
    round_number: int = 0,
    cpu: dict[str, float] | None = None,
    tree: TreeCpu | None = None,
) -> tuple[float, float]:
    """N jobs submitted, then passes until all SUCCEEDED: (submit jobs/s, end-to-end jobs/s).
    `cpu` gets the ms per job of the submits, the scheduler and (with `tree`) the rest."""
    from django.contrib.auth import get_user_model

    from jobs.actions import submit_job
    from jobs.models import Job, JobState
    from scheduling.scheduler import Scheduler

    user, _ = get_user_model().objects.get_or_create(username="bench")
    own0, t0 = time.process_time(), time.perf_counter()
    for i in range(n):
        submit_job(user, text.format(name=f"bench-{round_number}-{i}", command=command))
    own1, tree1, t1 = time.process_time(), tree.seconds() if tree else 0.0, time.perf_counter()
    scheduler = Scheduler()
    deadline = time.monotonic() + 60 + n
    while Job.objects.exclude(state=JobState.SUCCEEDED).exists():
        if time.monotonic() > deadline:
            states = list(Job.objects.values_list("state", flat=True).distinct())
            raise SystemExit(f"portal: jobs not finished in time (states: {states})")
        if not scheduler.run_once():
            scheduler.idle_wait(idle_sleep)  # as `runscheduler` waits between idle passes
    own2, tree2, t2 = time.process_time(), tree.seconds() if tree else 0.0, time.perf_counter()
    scheduler.release_lease()
    if cpu is not None:
        cpu["submit"] = 1000 * (own1 - own0) / n
        cpu["scheduler"] = 1000 * (own2 - own1) / n
        if tree is not None:
            cpu["tasks"] = 1000 * ((tree2 - tree1) - (own2 - own1)) / n
    return n / (t1 - t0), n / (t2 - t0)


def run_slurm(n: int, slots: int) -> tuple[float | None, float | None, str]:
    """slurm-local.sh's bench on a Slurm of this run's own (bench.slurm_local), stopped after."""
    script = slurm_local.tool()
    if script is None:
        return None, None, f"{slurm_local.TOOL} not found"
    with slurm_local.own_slurm(cpus=slots) as env:
        start = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, env=env)
        if start.returncode != 0:
            return None, None, "slurm-local start failed: " + start.stderr.strip()[-200:]
        bench = subprocess.run(["bash", str(script), "bench", str(n)], capture_output=True, text=True, env=env)
    match = re.search(r"submit ([\d.]+) jobs/s, end-to-end ([\d.]+) jobs/s", bench.stdout)
    if not match:
        return None, None, "slurm-local bench failed: " + (bench.stderr or bench.stdout).strip()[-200:]
    return float(match.group(1)), float(match.group(2)), ""


RAW_IDS: set[int] = set()  # Slurm's ids of the raw jobs (the rest of the cluster's jobs are the portal's)


def slurm_job_times(slurmctld_log: Path) -> dict[int, tuple[float, float]]:
    """Each Slurm job's start and end (epoch seconds) from slurmctld's log: when it got its slot
    and when Slurm saw it complete."""
    started: dict[int, float] = {}
    times: dict[int, tuple[float, float]] = {}
    for line in slurmctld_log.read_text().splitlines():
        if match := re.search(r"(?:Started JobId=|Allocate JobId=)(\d+)", line):
            started[int(match[1])] = datetime.fromisoformat(line[1:24]).timestamp()
        elif (match := re.search(r"_job_complete: JobId=(\d+) done", line)) and int(match[1]) in started:
            job_id = int(match[1])
            times[job_id] = (started[job_id], datetime.fromisoformat(line[1:24]).timestamp())
    return times


def slot_times(slurmctld_log: Path) -> tuple[float, float]:
    """Median ms a job held its Slurm slot (started -> complete, from slurmctld's log): raw, portal."""
    held: dict[bool, list[float]] = {True: [], False: []}
    for job_id, (start, end) in slurm_job_times(slurmctld_log).items():
        held[job_id in RAW_IDS].append(1000 * (end - start))
    return statistics.median(held[True] or [0]), statistics.median(held[False] or [0])


def run_raw_slurm(n: int, conf: str, partition: str, command: str) -> tuple[float, float]:
    """N `sbatch --wrap 'srun COMMAND'` until none is left in Slurm's queue: (submit, end-to-end jobs/s)."""
    env = {**os.environ, "SLURM_CONF": conf}
    name = f"raw-{os.getpid()}"
    t0 = time.perf_counter()
    for _ in range(n):
        done = subprocess.run(
            ["sbatch", "--parsable", f"--job-name={name}", f"--partition={partition}", "--output=/dev/null",
             "--ntasks=1", "--cpus-per-task=1", "--mem-per-cpu=512", "--wrap", f"srun {command}"],
            env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        RAW_IDS.add(int(done.stdout.strip().split(";")[0]))
    t1 = time.perf_counter()
    while True:
        # A failed squeue (slurmctld busy) is no empty queue: only a real answer counts.
        left = subprocess.run(
            ["squeue", "--noheader", f"--name={name}", "--format=%i"], env=env, capture_output=True, text=True
        )
        if left.returncode == 0 and not left.stdout.strip():
            break
        time.sleep(0.05)  # each squeue is a slurmctld RPC: asking too often slows Slurm down
    return n / (t1 - t0), n / (time.perf_counter() - t0)


def slurm_phases(slurmctld_log: Path) -> dict[str, float]:
    """Median ms of each step of a portal job on Slurm: its slot from slurmctld's log, then the job
    directory's file times (the wrapper's probe, the portal's launch, the supervisor's pid, the
    task's exit record) and the job's end in the database."""
    from clusters.job_files import slurm_job_dir
    from jobs.models import Job

    steps: dict[str, list[float]] = {
        "Slurm start -> batch script (its output opened)": [],
        "batch script -> step (its output opened)": [],
        "step -> probe (wrapper start)": [],
        "probe -> launch written (portal)": [],
        "launch -> supervisor up (wrapper)": [],
        "supervisor up -> exit recorded (task)": [],
        "exit recorded -> Slurm job end (step ends)": [],
        "exit recorded -> job SUCCEEDED (portal)": [],
    }
    slurm_times = slurm_job_times(slurmctld_log)
    for job_id, completed in Job.objects.exclude(completed_at=None).values_list("pk", "completed_at"):
        assert completed is not None
        job_dir = slurm_job_dir(job_id, 1)
        try:
            probe_path = job_dir / "probe" / "main-0.json"
            probe = probe_path.stat().st_mtime
            batch = (job_dir / "batch.log").stat().st_mtime
            step_started = (job_dir / "steps" / "main-0.out").stat().st_mtime
            launch = (job_dir / "launch" / "main-0-1.json").stat().st_mtime
            pid = (job_dir / "main-0-1" / "pid").stat().st_mtime
            exited = (job_dir / "main-0-1" / "exit_code").stat().st_mtime
            slurm_start, slurm_end = slurm_times[int(json.loads(probe_path.read_text())["step"].split(".")[0])]
        except (OSError, KeyError, ValueError):
            continue
        spans = [(slurm_start, batch), (batch, step_started), (step_started, probe), (probe, launch), (launch, pid)]
        spans += [(pid, exited), (exited, slurm_end), (exited, completed.timestamp())]
        for step, (begin, end) in zip(steps, spans, strict=True):
            steps[step].append(1000 * (end - begin))
    return {step: statistics.median(values) for step, values in steps.items() if values}


def run_portal_round(n: int, command: str, number: int, cpu_ms: list[float]) -> tuple[float, float]:
    """One portal round; its CPU per job (this process: submits and scheduler) appended to cpu_ms."""
    cpu = time.process_time()
    rates = submit_and_run(n, JOB_TEXT, idle_sleep=0.05, command=command, round_number=number)
    cpu_ms.append(1000 * (time.process_time() - cpu) / n)
    return rates


def run_on_slurm(n: int, job_seconds: float, rounds: int) -> None:
    """Rounds of raw sbatch and the portal on one cluster, alternating which goes first."""
    command = f"sleep {job_seconds:g}" if job_seconds else "true"
    cluster = f"b{os.getpid() % 100000}"
    script = ROOT / "scripts" / "dev-cluster.sh"
    state = tempfile.mkdtemp(prefix="pai-bench-slurm-")
    env = {**os.environ, "PAI_DEV_CLUSTER_DIR": state}
    up = subprocess.run(
        ["bash", str(script), "up", "3", "--slurm", "--name", cluster, "--subnet", "10.247.9.0/24", "--gpus", "0"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    if up.returncode != 0:
        raise SystemExit(f"dev-cluster.sh up --slurm failed: {up.stderr[-500:]}")
    conf = up.stdout.splitlines()[-1].removeprefix("SLURM_CONF=")
    slurmctld_log = Path(state) / cluster / "slurm" / "log" / "slurmctld.log"
    results: list[tuple[float, float, float, float]] = []
    cpu_ms: list[float] = []
    phases: dict[str, float] = {}
    try:
        setup_django(PAI_SLURM_CONF=conf, PAI_SLURM_JOB_PREFIX=f"bench{os.getpid()}")
        from django.core.management import call_command

        call_command("createvc", "default", "--slurm-partition", cluster, verbosity=0)
        run_raw_slurm(6, conf, cluster, command)  # warm-up: the first jobs on fresh slurmds are slower
        for number in range(rounds):
            from jobs.models import Job

            Job.objects.all().delete()
            if number % 2:
                portal = run_portal_round(n, command, number, cpu_ms)
                raw = run_raw_slurm(n, conf, cluster, command)
            else:
                raw = run_raw_slurm(n, conf, cluster, command)
                portal = run_portal_round(n, command, number, cpu_ms)
            phases = slurm_phases(slurmctld_log)
            results.append((*raw, *portal))
        raw_held, portal_held = slot_times(slurmctld_log)
    finally:
        subprocess.run(["bash", str(script), "down", "--name", cluster], env=env, capture_output=True)
    print(f"\n{n} one-task jobs running `{command}` on a 3-node Slurm dev cluster (6 CPU slots), {rounds} rounds")
    columns = f"{'sbatch jobs/s':>14}{'portal jobs/s':>14}{'sbatch s':>10}{'portal s':>10}{'overhead':>10}"
    print(f"{'round':<7}{'first':<8}{columns}")
    overheads = []
    for number, (_, raw_e2e, _, portal_e2e) in enumerate(results):
        overheads.append(100 * (raw_e2e / portal_e2e - 1))
        first = "portal" if number % 2 else "sbatch"
        print(
            f"{number + 1:<7}{first:<8}{raw_e2e:>14.1f}{portal_e2e:>14.1f}{n / raw_e2e:>10.2f}{n / portal_e2e:>10.2f}"
            f"{overheads[-1]:>+9.0f}%"
        )
    print(
        f"the portal adds {statistics.median(overheads):+.0f} % (median; {min(overheads):+.0f} to "
        f"{max(overheads):+.0f} %) to Slurm's end-to-end time (goal: <= +10 %)"
    )
    print(f"a job holds its Slurm slot (median, slurmctld's log): {raw_held:.0f} ms raw, {portal_held:.0f} ms portal")
    print(f"the portal's own CPU per job (submit and scheduler, median): {statistics.median(cpu_ms):.0f} ms")
    print("a portal job's steps (median ms, last round):")
    for step, ms in phases.items():
        print(f"  {step:<42}{ms:>8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description="trivial jobs end to end: the portal beside Slurm")
    parser.add_argument("n", type=int, nargs="?", default=200)
    parser.add_argument("--slots", type=int, default=os.cpu_count() or 2, help="CPU slots declared for both")
    parser.add_argument("--slurm", action="store_true", help="the portal on a Slurm dev cluster vs sbatch alone")
    parser.add_argument("--rounds", type=int, default=4, help="--slurm: rounds of both, alternating which goes first")
    parser.add_argument("--job-seconds", type=float, default=0, help="--slurm: each job sleeps this long (0: `true`)")
    parser.add_argument("--address", default="", help="the portal node's address (default: a loopback of its own)")
    parser.add_argument("--skip-slurm", action="store_true", help="the portal alone")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument(
        "--interval", type=float, help="the wait between idle passes (default: runscheduler's, PAI_SCHEDULER_INTERVAL)"
    )
    args = parser.parse_args()
    if args.slurm:
        run_on_slurm(args.n, args.job_seconds, args.rounds)
        return
    n, slots = args.n, args.slots
    slurm_submit, slurm_e2e, why = (None, None, "skipped (--skip-slurm)") if args.skip_slurm else run_slurm(n, slots)
    portal_submit, portal_e2e, cpu = run_portal(n, slots, args.address or own_loopback_address(), args.interval)

    def fmt(value: float | None) -> str:
        return f"{value:10.1f}" if value is not None else "       n/a"

    print(f"\n{n} trivial one-task jobs, {slots} slots, same machine (load average {os.getloadavg()[0]:.1f})")
    print(f"{'system':<28}{'submit jobs/s':>14}{'end-to-end jobs/s':>20}")
    print(f"{'PAI Portal (process exec.)':<28}{fmt(portal_submit):>14}{fmt(portal_e2e):>20}")
    print(f"{'Slurm (slurm-local.sh)':<28}{fmt(slurm_submit):>14}{fmt(slurm_e2e):>20}")
    if slurm_e2e:
        print(f"end-to-end ratio portal/slurm: {portal_e2e / slurm_e2e:.1f}x (goal >= 3x at 16 slots, 10x at 2)")
    parts = {"submit": "submit", "scheduler": "scheduler", "tasks": "each task's supervisor, sandbox, network, command"}
    shown = [f"{label} {cpu[key]:.1f} ms" for key, label in parts.items() if key in cpu]
    print("portal CPU per job: " + ", ".join(shown))
    if "tasks" not in cpu:
        print("  (outside the scheduler it is counted only as root, cgroup v1, cpuacct apart: bench/cpu.py)")
    if why:
        print(f"slurm: {why}")
    if args.json:
        figures = {"portal_jobs_s": portal_e2e, "slurm_jobs_s": slurm_e2e, **{f"cpu_{k}_ms": v for k, v in cpu.items()}}
        figures["ratio"] = portal_e2e / slurm_e2e if slurm_e2e else None
        args.json.write_text(json.dumps(figures))


if __name__ == "__main__":
    main()
