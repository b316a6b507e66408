"""GPU allocation on a machine with real NVIDIA GPUs, end to end, without Docker.

    PYTHONPATH=<site-packages> python3 scripts/gpu_check.py

What it proves, on a throwaway state directory: `bootstrap` registers this machine as node `local`
with the GPUs `nvidia-smi` reports (type from the GPU's name); a 1-GPU job placed there by the real
scheduler gets one allocated GPU index, CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES naming it,
and the PAI_* GPU variables; a CUDA program in the task sees exactly that GPU; the sampler reads
the GPUs; a job asking for more GPUs than the machine has waits and says why. Exits 1 when a check
fails. Not a test (CI has no GPU): run it where `device` lends one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.update(PAI_VAR_DIR=tempfile.mkdtemp(prefix="pai-gpu-check-"), DJANGO_SETTINGS_MODULE="pai_portal.settings")

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
      - nvidia-smi -L
      - echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"
      - env | grep -E '^PAI_.*(GPU|RESOURCE)' | sort
      - python3 -c "import torch; print('torch sees', torch.cuda.device_count(), torch.cuda.get_device_name(0))"
"""


def main() -> int:
    import django

    django.setup()
    from django.core.management import call_command

    if shutil.which("nvidia-smi") is None:
        print("no nvidia-smi here: nothing to check")
        return 1
    print(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip())
    call_command("migrate", verbosity=0)
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
    admin = get_user_model().objects.get(username="admin")  # an unsandboxed process node runs admins' jobs only
    one = submit_job(admin, TASK.format(name="one-gpu", gpus=1))
    too_many = submit_job(admin, TASK.format(name="too-many", gpus=len(gpus) + 1))
    scheduler = Scheduler()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        scheduler.run_once()
        one.refresh_from_db()
        if one.is_finished:
            break
        time.sleep(0.2)
    print("sampler readings:", read_local_gpus())
    task = one.tasks.get()
    log = Path(task.log_path).read_text() if task.log_path else ""
    print(f"job one-gpu: {one.state}, exit {task.exit_code}, allocated GPUs {task.gpus}\n--- its log ---\n{log}---")
    too_many = Job.objects.get(pk=too_many.pk)
    print(f"job too-many: {too_many.state}: {too_many.pending_reason}")
    checks = {
        "bootstrap registered every GPU nvidia-smi lists": len(gpus) > 0 and len(gpus) == len(read_local_gpus()),
        "the 1-GPU job succeeded": one.state == "SUCCEEDED",
        "it was given one GPU": len(task.gpus) == 1,
        "CUDA_VISIBLE_DEVICES names it": f"CUDA_VISIBLE_DEVICES={task.gpus[0] if task.gpus else ''} " in log,
        "CUDA sees exactly one GPU": "torch sees 1 " in log,
        "a job asking for more GPUs than there are waits": too_many.state == "WAITING"
        and bool(too_many.pending_reason),
    }
    for check, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {check}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
