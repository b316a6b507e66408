"""Real distributed training across the dev cluster's two Docker nodes, with the README's examples
as written: `torchrun` (PyTorch's gloo backend) all-reduces a tensor over two tasks, one per node,
and `mpirun` (OpenMPI) runs an mpi4py all-reduce over the job's hostfile and `ssh` (issue 31).

The image is pai-portal/training:latest (`make image-training`: Debian's python3-torch, openmpi-bin
and python3-mpi4py on the base image), built when absent and loaded into both engines."""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from jobs.models import Job, JobState
from tests.multinode.conftest import NODE_CPUS, DevCluster, run_to_end

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "pai-portal/training:latest"

# Each rank adds rank + 1: over two ranks the sum is 3 everywhere.
ALLREDUCE_PY = """\
import torch, torch.distributed as dist
dist.init_process_group("gloo")
value = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(value)
print(f"RANK={dist.get_rank()} WORLD={dist.get_world_size()} SUM={value.item():g}", flush=True)
assert value.item() == dist.get_world_size() * (dist.get_world_size() + 1) / 2
"""
MPI_PY = """\
from mpi4py import MPI
import socket
world = MPI.COMM_WORLD
total = world.allreduce(world.Get_rank() + 1)
print(f"MPI RANK={world.Get_rank()} SIZE={world.Get_size()} HOST={socket.gethostname()} SUM={total}", flush=True)
assert total == world.Get_size() * (world.Get_size() + 1) // 2
"""


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


def script_lines(name: str, text: str) -> str:
    """Commands that write `text` to `name` in the task's working directory (a job ships no files)."""
    body = textwrap.indent(text, "        ")
    return f"""      - |
        cat > {name} <<'PY'
{body}        PY
"""


def two_task_job(name: str, image: str, role_lines: str, commands: str, extras: str = "") -> str:
    """A job of two 2-CPU tasks (one per node), as the README's examples write it."""
    return f"""protocolVersion: 2
name: {name}
type: job
prerequisites:
  - {{name: image, type: dockerimage, uri: {image}}}
taskRoles:
  worker:
    instances: 2
    dockerImage: image
    resourcePerInstance: {{cpu: {NODE_CPUS}, memoryMB: 1536, gpu: 0}}
{role_lines}    commands:
{commands}{extras}"""


def torchrun_job(image: str) -> str:
    """The README's torchrun example, with the all-reduce as train.py.
    `--redirects 1 --tee 1`: Debian's torchrun (PyTorch 1.13 on Python 3.11) fails on its defaults
    (`AttributeError: 'NoneType' object has no attribute 'get'`: Python 3.11 no longer lists a
    flag enum's 0 member, which its `Std.from_str("0")` looks for)."""
    launch = """      - >-
        torchrun --nnodes "$WORLD_SIZE" --node_rank "$NODE_RANK" --nproc_per_node 1
        --master_addr "$MASTER_ADDR" --master_port "$MASTER_PORT" --redirects 1 --tee 1 train.py
"""
    role_lines = "    extraContainerOptions: {shmMB: 1024}\n"
    return two_task_job("ddp", image, role_lines, script_lines("train.py", ALLREDUCE_PY) + launch)


def mpirun_job(image: str) -> str:
    """The README's mpirun example, running the mpi4py all-reduce instead of `hostname`."""
    launch = """      - >-
        if [ "$RANK" = 0 ]; then mpirun --allow-run-as-root --hostfile "$PAI_MPI_HOSTFILE"
        --map-by node -np "$WORLD_SIZE" python3 "$PWD/allreduce.py"; else sleep infinity; fi
"""
    extras = """extras:
  com.microsoft.pai.runtimeplugin:
    - {plugin: ssh, parameters: {jobssh: true, sshbarrier: true}}
"""
    role_lines = "    completion: {minSucceededInstances: 1}\n"
    return two_task_job("mpi", image, role_lines, script_lines("allreduce.py", MPI_PY) + launch, extras)


def run(text: str, user) -> tuple[Job, dict[str, str]]:
    from jobs.actions import submit_job
    from scheduling.scheduler import Scheduler

    job = submit_job(user, text)
    run_to_end(job, Scheduler(holder="training-test"), timeout=300)
    logs = {f"{t.role}-{t.index}": Path(t.log_path).read_text() if t.log_path else "" for t in job.tasks.all()}
    return job, logs


def test_it_runs_torchrun_with_gloo_across_two_nodes(training_image, cluster_nodes, user):
    job, logs = run(torchrun_job(training_image), user)
    assert job.state == JobState.SUCCEEDED, (job.exit_diagnostics, logs)
    assert {task.node.name for task in job.tasks.select_related("node") if task.node} == {
        node.name for node in cluster_nodes
    }
    assert "RANK=0 WORLD=2 SUM=3" in logs["worker-0"], logs
    assert "RANK=1 WORLD=2 SUM=3" in logs["worker-1"], logs


def test_it_runs_mpirun_over_the_hostfile_across_two_nodes(training_image, cluster_nodes, user):
    job, logs = run(mpirun_job(training_image), user)
    assert job.state == JobState.SUCCEEDED, (job.exit_diagnostics, logs)
    lines = sorted(re.findall(r"^MPI RANK=(\d) SIZE=2 HOST=(\S+) SUM=3$", logs["worker-0"], re.MULTILINE))
    assert [rank for rank, _ in lines] == ["0", "1"], logs
    assert lines[0][1] != lines[1][1]  # (two tasks, two hosts)
