"""Submit -> SUCCEEDED throughput of trivial one-task jobs (`true`) on the process executor, with
the real scheduler loop, beside a real one-node Slurm on the same machine with the same slots.

    .venv/bin/python bench/throughput.py [N] [--slots S]      (default N=200, S = the machine's CPUs)

--slots declares S CPU slots for both systems (the portal's node and slurm-local.sh's
SLURM_LOCAL_CPUS), so the schedulers are compared at equal slots on a small machine.

Our figure: N jobs submitted through jobs.actions.submit_job, then the scheduler's passes run
back to back (as `runscheduler` does while busy) until every job has SUCCEEDED. Slurm's figure
comes from ../shared/tools/slurm-local.sh (slurmctld + slurmd + munge from Debian's packages).
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


def run_portal(n: int, slots: int) -> tuple[float, float]:
    var = Path(tempfile.mkdtemp(prefix="pai-bench-"))
    os.environ.update(PAI_VAR_DIR=str(var), PAI_SQLITE_PATH=str(var / "db.sqlite3"), PAI_LOG_LEVEL="WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pai_portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from clusters.models import Node
    from jobs.actions import submit_job
    from jobs.models import Job, JobState
    from scheduling.scheduler import Scheduler

    Node.objects.create(name="local", executor="process", cpus=slots, memory_mb=slots * 1024)
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    text = (
        "protocolVersion: 2\nname: {name}\ntype: job\n"
        "prerequisites:\n  - {{name: image, type: dockerimage, uri: pai-portal/base:latest}}\n"
        "taskRoles:\n  main:\n    instances: 1\n    dockerImage: image\n"
        "    resourcePerInstance: {{cpu: 1, memoryMB: 512, gpu: 0}}\n    commands: ['true']\n"
    )
    t0 = time.perf_counter()
    for i in range(n):
        submit_job(user, text.format(name=f"bench-{i}"))
    t1 = time.perf_counter()
    scheduler = Scheduler()
    deadline = time.monotonic() + 60 + n
    while Job.objects.exclude(state=JobState.SUCCEEDED).exists():
        if time.monotonic() > deadline:
            states = list(Job.objects.values_list("state", flat=True).distinct())
            raise SystemExit(f"portal: jobs not finished in time (states: {states})")
        if not scheduler.run_once():
            time.sleep(0.005)
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


def main() -> None:
    parser = argparse.ArgumentParser(description="trivial jobs end to end: the portal beside Slurm")
    parser.add_argument("n", type=int, nargs="?", default=200)
    parser.add_argument("--slots", type=int, default=os.cpu_count() or 2, help="CPU slots declared for both")
    args = parser.parse_args()
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
