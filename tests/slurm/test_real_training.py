"""The distributed-training examples of docs/user/distributed.md as written, on two Slurm nodes without Docker
(issue 31): each task a sandboxed process in its Slurm step, on the node's own network and its own
PyTorch, OpenMPI and mpi4py (Debian's python3-torch, openmpi-bin, python3-mpi4py: `.ci/run`
installs them). `torchrun` all-reduces over gloo; `mpirun` starts its second rank over
`ssh worker-1`, into that task's own sshd (as the task's user, on its `ssh` port), and
`$PWD/allreduce.py` names the same file in both tasks."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from jobs.actions import submit_job
from jobs.models import Job
from tests.conftest import require
from tests.factories import create_user, default_image
from tests.slurm.conftest import NODE_CPUS
from tests.training import mpi_hosts, mpirun_job, torchrun_job, torchrun_succeeded

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ON_THE_SLURM_VC = "defaults: {virtualCluster: gpu}\n"


@pytest.fixture
def user(db):
    require(
        subprocess.run(["/usr/bin/python3", "-c", "import torch, mpi4py"], capture_output=True).returncode == 0
        and shutil.which("mpirun") is not None
        and Path("/usr/sbin/sshd").exists(),
        "python3-torch, python3-mpi4py, openmpi-bin and openssh-server on this machine (the Slurm nodes' system)",
    )
    return create_user("trainer")


def run(job: Job, run_until) -> tuple[Job, dict[str, str]]:
    job = run_until(job, "SUCCEEDED", "FAILED", timeout=180)
    logs = {f"{t.role}-{t.index}": Path(t.log_path).read_text() for t in job.tasks.all()}
    assert job.state == "SUCCEEDED", logs
    assert len({task.node_id for task in job.tasks.all()}) == 2  # (a task fills a node)
    return job, logs


def test_it_runs_torchrun_with_gloo_across_two_slurm_nodes(slurm_vc, user, run_until):
    _, logs = run(submit_job(user, torchrun_job(default_image(), NODE_CPUS, ON_THE_SLURM_VC)), run_until)
    assert torchrun_succeeded(logs), logs


def test_it_runs_mpirun_over_the_hostfile_across_two_slurm_nodes(slurm_vc, user, run_until):
    _, logs = run(submit_job(user, mpirun_job(default_image(), NODE_CPUS, ON_THE_SLURM_VC)), run_until)
    assert mpi_hosts(logs["worker-0"]) == [("0", "worker-0"), ("1", "worker-1")], logs
