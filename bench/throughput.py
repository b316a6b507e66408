"""Submit -> SUCCEEDED throughput of trivial one-task jobs (`true`) on the process executor, with
the real scheduler loop, beside a real one-node Slurm on the same machine with the same slots.

    .venv/bin/python bench/throughput.py [N] [--slots S]      (default N=200, S = the machine's CPUs)
    .venv/bin/python bench/throughput.py [N] --slurm          (root; slurm-wlm and munge)

--slots declares S CPU slots for both systems (the portal's node and slurm-local.sh's
SLURM_LOCAL_CPUS), so the schedulers are compared at equal slots on a small machine.

Our figure: N jobs submitted through jobs.actions.submit_job, then the scheduler's passes run
back to back (as `runscheduler` does while busy) until every job has SUCCEEDED. Slurm's figure
comes from ../shared/tools/slurm-local.sh (slurmctld + slurmd + munge from Debian's packages).

--slurm: the portal ON Slurm against Slurm alone, on one dev cluster (`scripts/dev-cluster.sh up 3
--slurm`, 2 CPUs a node). Raw: N `sbatch --wrap 'srun true'` (one step, as the portal's jobs have;
`sleep S` with --job-seconds S)
until Slurm has ended them all. Portal: N jobs of a VC on the partition, submitted through
submit_job, the scheduler's passes back to back until every job has SUCCEEDED. The portal's
overhead is its end-to-end time over Slurm's (goal: at most +10 %).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLURM = ROOT.parent / "shared" / "tools" / "slurm-local.sh"


JOB_TEXT = (
    "protocolVersion: 2\nname: {name}\ntype: job\n"
    "prerequisites:\n  - {{name: image, type: dockerimage, uri: pai-portal/base:latest}}\n"
    "taskRoles:\n  main:\n    instances: 1\n    dockerImage: image\n"
    "    resourcePerInstance: {{cpu: 1, memoryMB: 512, gpu: 0}}\n    commands: ['{command}']\n"
)


def setup_django(**env: str) -> None:
    var = Path(tempfile.mkdtemp(prefix="pai-bench-"))
    os.environ.update(PAI_VAR_DIR=str(var), PAI_SQLITE_PATH=str(var / "db.sqlite3"), PAI_LOG_LEVEL="WARNING", **env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def run_portal(n: int, slots: int) -> tuple[float, float]:
    setup_django()
    from clusters.models import Node

    Node.objects.create(name="local", executor="process", cpus=slots, memory_mb=slots * 1024)
    return submit_and_run(n, JOB_TEXT)


def submit_and_run(n: int, text: str, idle_sleep: float = 0.005, command: str = "true") -> tuple[float, float]:
    """N jobs submitted, then passes until all SUCCEEDED: (submit jobs/s, end-to-end jobs/s)."""
    from django.contrib.auth import get_user_model

    from jobs.actions import submit_job
    from jobs.models import Job, JobState
    from scheduling.scheduler import Scheduler

    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    t0 = time.perf_counter()
    for i in range(n):
        submit_job(user, text.format(name=f"bench-{i}", command=command))
    t1 = time.perf_counter()
    scheduler = Scheduler()
    deadline = time.monotonic() + 60 + n
    while Job.objects.exclude(state=JobState.SUCCEEDED).exists():
        if time.monotonic() > deadline:
            states = list(Job.objects.values_list("state", flat=True).distinct())
            raise SystemExit(f"portal: jobs not finished in time (states: {states})")
        if not scheduler.run_once():
            time.sleep(idle_sleep)
    t2 = time.perf_counter()
    scheduler.release_lease()
    return n / (t1 - t0), n / (t2 - t0)


def run_slurm(n: int, slots: int) -> tuple[float | None, float | None, str]:
    if not SLURM.exists():
        return None, None, f"{SLURM} not found"
    env = {**os.environ, "SLURM_LOCAL_CPUS": str(slots)}
    subprocess.run(["bash", str(SLURM), "stop"], capture_output=True, text=True, env=env)  # new slot count
    start = subprocess.run(["bash", str(SLURM), "start"], capture_output=True, text=True, env=env)
    if start.returncode != 0:
        return None, None, "slurm-local start failed: " + start.stderr.strip()[-200:]
    bench = subprocess.run(["bash", str(SLURM), "bench", str(n)], capture_output=True, text=True, env=env)
    match = re.search(r"submit ([\d.]+) jobs/s, end-to-end ([\d.]+) jobs/s", bench.stdout)
    if not match:
        return None, None, "slurm-local bench failed: " + (bench.stderr or bench.stdout).strip()[-200:]
    return float(match.group(1)), float(match.group(2)), ""


def run_raw_slurm(n: int, conf: str, partition: str, command: str) -> tuple[float, float]:
    """N `sbatch --wrap 'srun COMMAND'` until none is left in Slurm's queue: (submit, end-to-end jobs/s)."""
    env = {**os.environ, "SLURM_CONF": conf}
    name = f"raw-{os.getpid()}"
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run(
            ["sbatch", "--parsable", f"--job-name={name}", f"--partition={partition}", "--output=/dev/null",
             "--ntasks=1", "--cpus-per-task=1", "--mem-per-cpu=512", "--wrap", f"srun {command}"],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
    t1 = time.perf_counter()
    while True:
        # A failed squeue (slurmctld busy) is no empty queue: only a real answer counts.
        left = subprocess.run(
            ["squeue", "--noheader", f"--name={name}", "--format=%i"], env=env, capture_output=True, text=True
        )
        if left.returncode == 0 and not left.stdout.strip():
            break
        time.sleep(0.02)
    return n / (t1 - t0), n / (time.perf_counter() - t0)


def run_on_slurm(n: int, job_seconds: float) -> None:
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
    try:
        raw_submit, raw_e2e = run_raw_slurm(n, conf, cluster, command)
        setup_django(PAI_SLURM_CONF=conf, PAI_SLURM_JOB_PREFIX=f"bench{os.getpid()}")
        from django.core.management import call_command

        call_command("createvc", "default", "--slurm-partition", cluster, verbosity=0)
        portal_submit, portal_e2e = submit_and_run(n, JOB_TEXT, idle_sleep=0.05, command=command)
    finally:
        subprocess.run(["bash", str(script), "down", "--name", cluster], env=env, capture_output=True)
    print(f"\n{n} one-task jobs running `{command}` on a 3-node Slurm dev cluster (6 CPU slots), same run")
    print(f"{'system':<28}{'submit jobs/s':>14}{'end-to-end jobs/s':>20}{'end-to-end s':>14}")
    print(f"{'Slurm alone (sbatch)':<28}{raw_submit:>14.1f}{raw_e2e:>20.1f}{n / raw_e2e:>14.2f}")
    print(f"{'PAI Portal on Slurm':<28}{portal_submit:>14.1f}{portal_e2e:>20.1f}{n / portal_e2e:>14.2f}")
    print(f"the portal adds {100 * (raw_e2e / portal_e2e - 1):+.0f} % to Slurm's end-to-end time (goal: <= +10 %)")


def main() -> None:
    parser = argparse.ArgumentParser(description="trivial jobs end to end: the portal beside Slurm")
    parser.add_argument("n", type=int, nargs="?", default=200)
    parser.add_argument("--slots", type=int, default=os.cpu_count() or 2, help="CPU slots declared for both")
    parser.add_argument("--slurm", action="store_true", help="the portal on a Slurm dev cluster vs sbatch alone")
    parser.add_argument("--job-seconds", type=float, default=0, help="--slurm: each job sleeps this long (0: `true`)")
    args = parser.parse_args()
    if args.slurm:
        run_on_slurm(args.n, args.job_seconds)
        return
    n, slots = args.n, args.slots
    slurm_submit, slurm_e2e, why = run_slurm(n, slots)
    portal_submit, portal_e2e = run_portal(n, slots)

    def fmt(value: float | None) -> str:
        return f"{value:10.1f}" if value is not None else "       n/a"

    print(f"\n{n} trivial one-task jobs, {slots} slots, same machine")
    print(f"{'system':<28}{'submit jobs/s':>14}{'end-to-end jobs/s':>20}")
    print(f"{'PAI Portal (process exec.)':<28}{fmt(portal_submit):>14}{fmt(portal_e2e):>20}")
    print(f"{'Slurm (slurm-local.sh)':<28}{fmt(slurm_submit):>14}{fmt(slurm_e2e):>20}")
    if slurm_e2e:
        print(f"end-to-end ratio portal/slurm: {portal_e2e / slurm_e2e:.1f}x (goal >= 3x at 16 slots, 10x at 2)")
    if why:
        print(f"slurm: {why}")


if __name__ == "__main__":
    main()
