"""GPU allocation on a machine with real NVIDIA GPUs, end to end, without Docker.

    PYTHONPATH=<site-packages> python3 scripts/gpu_check.py

What it proves, on a throwaway state directory: this machine, registered as process node `local`,
has the GPUs `nvidia-smi` reports (type from the GPU's name) and can sandbox tasks
(bubblewrap; its executor's `sandbox_problem` is empty, else the check says why); an admin's 1-GPU
job and then a plain user's, placed there by the real scheduler, each get one allocated GPU index,
CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES naming it and the PAI_* GPU variables, and a CUDA
program in the task sees exactly that GPU by name; the user's task ran in the sandbox (the user's
own sandbox uid, a pid namespace of its own, only its GPU's device node); the sampler reads the
GPUs; a job asking for more GPUs than the machine has waits and says why. Exits 1 when a check
fails. Not a test (CI has no GPU): run it where `device` lends one. Its sandbox part runs on any
machine with bubblewrap (tests/scheduler/test_gpu_check.py runs it with no GPU).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clusters.executors.process import ProcessExecutor
    from jobs.models import Job
    from scheduling.scheduler import Scheduler

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
JOBS_TIMEOUT_S = 180

TASK = """protocolVersion: 2
name: {name}
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: pai-portal/base:latest}}
taskRoles:
  trainer:
    instances: 1
    dockerImage: image
    resourcePerInstance: {{cpu: 1, memoryMB: 4096, gpu: {gpus}}}
    commands:
{commands}"""

# Where a task runs, as it sees it: its uid, its pid 1 (bwrap's init in a sandbox), the GPU device
# nodes it has, and the GPU variables the portal gave it.
WHERE_AM_I = (
    'echo "uid=$(id -u)"',
    'echo "pid 1: $(cat /proc/1/comm)"',
    'echo "devices: $(ls -d /dev/nvidia* 2>/dev/null | xargs)"',
    'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"',
    "env | grep -E '^PAI_.*(GPU|RESOURCE)' | sort",
)
TORCH_SEES = "n = torch.cuda.device_count(); print('torch sees', n, *map(torch.cuda.get_device_name, range(n)))"
CUDA_PROBE = ("nvidia-smi -L", f'python3 -c "import torch; {TORCH_SEES}"')


@dataclass(frozen=True)
class Outcome:
    """What became of a job's one task."""

    state: str
    exit_code: int | None
    gpus: list[int]
    log: str
    diagnostics: str  # why it failed, when the portal knows

    def shows(self, line: str) -> bool:
        return line in self.log.splitlines()

    def line(self, prefix: str) -> str:
        """The first line of its log that starts with `prefix` ('' if none)."""
        return next((line for line in self.log.splitlines() if line.startswith(prefix)), "")


def job_text(name: str, gpus: int, commands: tuple[str, ...] = WHERE_AM_I + CUDA_PROBE) -> str:
    # JSON strings are YAML's double-quoted scalars: a command's quotes and colons stay as written.
    return TASK.format(name=name, gpus=gpus, commands="".join(f"      - {json.dumps(c)}\n" for c in commands))


def run_to_the_end(scheduler: Scheduler, jobs: list[Job], timeout_s: float = JOBS_TIMEOUT_S) -> None:
    """The real scheduler's loop until every job has finished (or the time is up)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        scheduler.run_once()
        for job in jobs:
            job.refresh_from_db()
        if all(job.is_finished for job in jobs):
            return
        time.sleep(0.2)


def outcome_of(job: Job) -> Outcome:
    task = job.tasks.get()
    log = Path(task.log_path).read_text() if task.log_path else ""
    return Outcome(job.state, task.exit_code, list(task.gpus), log, task.exit_diagnostics or job.exit_diagnostics)


def process_executor(node: Any) -> ProcessExecutor | None:
    """The node's executor, as the scheduler builds it, when it is a process node."""
    from clusters.executors.process import ProcessExecutor
    from clusters.executors.registry import executor_for

    executor = executor_for(node.executor, node.address, node.docker_url)
    return executor if isinstance(executor, ProcessExecutor) else None


def sandbox_uid(executor: ProcessExecutor, user: Any) -> int:
    """The uid a sandboxed task of `user` runs as (its own when the portal is root)."""
    return executor.sandbox.base_id + user.pk if executor.sandbox.switches_user else os.getuid()


def sandbox_checks(who: str, outcome: Outcome, uid: int) -> dict[str, bool]:
    """Signs from inside the task that it ran in the sandbox, with no GPU device but its own."""
    devices = re.findall(r"/dev/nvidia(\d+)\b", outcome.line("devices:"))
    return {
        f"{who}'s task ran as its sandbox uid {uid}": outcome.shows(f"uid={uid}"),
        f"{who}'s task had a pid namespace of its own (pid 1 is bwrap)": outcome.shows("pid 1: bwrap"),
        f"{who}'s task had the device node of its GPU {outcome.gpus} and of no other": sorted(map(int, devices))
        == outcome.gpus,
    }


def gpu_job_checks(who: str, outcome: Outcome, names: dict[int, str]) -> dict[str, bool]:
    """A 1-GPU job: it succeeded on one allocated GPU, named in its variables, and CUDA saw just that one."""
    index = outcome.gpus[0] if len(outcome.gpus) == 1 else None
    name = names.get(index, "?") if index is not None else "?"
    return {
        f"{who}'s 1-GPU job succeeded": outcome.state == "SUCCEEDED",
        f"{who}'s job was given one GPU": index is not None,
        f"{who}'s CUDA_VISIBLE_DEVICES names it": f"CUDA_VISIBLE_DEVICES={index} NVIDIA_VISIBLE_DEVICES={index}"
        in outcome.log,
        f"{who}'s CUDA sees exactly that GPU ({name})": outcome.shows(f"torch sees 1 {name}"),
    }


def gpu_names() -> dict[int, str]:
    """Each GPU's name by index, as nvidia-smi (and so CUDA) calls it."""
    listing = subprocess.run(
        ["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
    ).stdout
    return {int(index): name.strip() for index, _, name in (row.partition(",") for row in listing.splitlines() if row)}


def describe_sandbox(executor: ProcessExecutor | None) -> str:
    if executor is None:
        return "not a process node: no bubblewrap sandbox"
    binary = shutil.which(executor.sandbox.bwrap)
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip() if binary else ""
    problem = str(executor.sandbox_problem or "")
    return f"{binary or executor.sandbox.bwrap} ({version or 'missing'}); sandbox_problem: {problem!r}"


def report(checks: dict[str, bool]) -> int:
    for number, (check, ok) in enumerate(checks.items(), start=1):
        print(f"{number:2}. {'ok  ' if ok else 'FAIL'} {check}")
    return 0 if all(checks.values()) else 1


def main() -> int:
    state = tempfile.mkdtemp(prefix="pai-gpu-check-")
    os.environ.update(PAI_VAR_DIR=state, DJANGO_SETTINGS_MODULE="pai_portal.settings")
    import django

    django.setup()
    from django.core.management import call_command

    if shutil.which("nvidia-smi") is None:
        print("no nvidia-smi here: nothing to check")
        return 1
    print(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip())
    call_command("migrate", verbosity=0)
    call_command("addnode", "--local", "--executor", "process")  # the sandbox is what is checked, Docker or not
    call_command("bootstrap")

    from django.contrib.auth import get_user_model

    from clusters.gpus import read_local_gpus
    from clusters.models import Node
    from jobs.actions import submit_job
    from jobs.models import Job
    from scheduling.scheduler import Scheduler

    node = Node.objects.get(name="local")
    gpus = [(gpu.index, gpu.gpu_type.name) for gpu in node.gpus.select_related("gpu_type")]
    print(f"node {node.name}: {node.executor}, GPUs {gpus}")
    executor = process_executor(node)
    print(f"sandbox: {describe_sandbox(executor)}")
    problem = "not a process node" if executor is None else executor.sandbox_problem
    User = get_user_model()
    admin = User.objects.get(username="admin")
    user = User.objects.create_user("gpu-user")  # not an admin: runs only in a sandbox
    jobs = [submit_job(admin, job_text("one-gpu", gpus=1)), submit_job(user, job_text("one-gpu", gpus=1))]
    too_many = submit_job(admin, job_text("too-many", gpus=len(gpus) + 1))  # last: it must not hold the others up
    run_to_the_end(Scheduler(), jobs)
    print("sampler readings:", read_local_gpus())
    names = gpu_names()
    checks = {
        "the node has every GPU nvidia-smi lists": len(gpus) > 0 and len(gpus) == len(read_local_gpus()),
        f"the node sandboxes tasks{f' (it cannot: {problem})' if problem else ''}": not problem,
    }
    for who, job in zip(("admin", "gpu-user"), jobs, strict=True):
        outcome = outcome_of(job)
        print(f"{who}'s job: {outcome.state}, exit {outcome.exit_code}, GPUs {outcome.gpus} {outcome.diagnostics}")
        print("--- its log ---")
        print(f"{outcome.log}---")
        checks |= gpu_job_checks(who, outcome, names)
        if who == "gpu-user" and executor is not None:
            checks |= sandbox_checks(who, outcome, sandbox_uid(executor, user))
    too_many = Job.objects.get(pk=too_many.pk)
    print(f"job too-many: {too_many.state}: {too_many.pending_reason}")
    checks["a job asking for more GPUs than there are waits"] = too_many.state == "WAITING" and bool(
        too_many.pending_reason
    )
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
