"""Real distributed training across the dev cluster's two Docker nodes, with the examples of docs/user/distributed.md
as written: `torchrun` (PyTorch's gloo backend) all-reduces a tensor over two tasks, one per node,
and `mpirun` (OpenMPI) runs an mpi4py all-reduce over the job's hostfile and `ssh` (issue 31).

The image is pai-portal/training:latest (`make image-training`: Debian's python3-torch, openmpi-bin
and python3-mpi4py on the base image), built when absent and loaded into both engines."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jobs.models import Job, JobState
from tests.multinode.conftest import NODE_CPUS, DevCluster, run_to_end
from tests.training import mpi_hosts, mpirun_job, torchrun_job, torchrun_succeeded

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "pai-portal/training:latest"


@pytest.fixture(scope="module")
def training_image(dev_cluster: DevCluster, tmp_path_factory) -> str:
    """The training image on the local engine (built when absent: `make image-training`) and
    loaded into both of the cluster's engines (no registry here)."""
    built = subprocess.run(
        ["bash", "scripts/build-base-image.sh", "training"], cwd=ROOT, capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr[-3000:]
    archive = tmp_path_factory.mktemp("image") / "training.tar"
    subprocess.run(["docker", "save", IMAGE, "-o", str(archive)], check=True)
    loads = [
        subprocess.Popen(["docker", "-H", engine.docker_url, "load", "-q", "-i", str(archive)], stderr=subprocess.PIPE)
        for engine in dev_cluster.engines
    ]
    for load in loads:
        _, error = load.communicate(timeout=600)
        assert load.returncode == 0, error[-2000:]
    archive.unlink()
    return IMAGE


def run(text: str, user) -> tuple[Job, dict[str, str]]:
    from jobs.actions import submit_job
    from scheduling.scheduler import Scheduler

    job = submit_job(user, text)
    run_to_end(job, Scheduler(holder="training-test"), timeout=300)
    logs = {f"{t.role}-{t.index}": Path(t.log_path).read_text() if t.log_path else "" for t in job.tasks.all()}
    return job, logs


def test_it_runs_torchrun_with_gloo_across_two_nodes(training_image, cluster_nodes, user):
    job, logs = run(torchrun_job(training_image, NODE_CPUS), user)
    assert job.state == JobState.SUCCEEDED, (job.exit_diagnostics, logs)
    assert {task.node.name for task in job.tasks.select_related("node") if task.node} == {
        node.name for node in cluster_nodes
    }
    assert torchrun_succeeded(logs), logs


def test_it_runs_mpirun_over_the_hostfile_across_two_nodes(training_image, cluster_nodes, user):
    job, logs = run(mpirun_job(training_image, NODE_CPUS), user)
    assert job.state == JobState.SUCCEEDED, (job.exit_diagnostics, logs)
    lines = mpi_hosts(logs["worker-0"])
    assert [rank for rank, _ in lines] == ["0", "1"], logs
    assert lines[0][1] != lines[1][1]  # (two tasks, two hosts)
