"""A real 3-node Slurm cluster for the tests of this package: `scripts/dev-cluster.sh up 3 --slurm`,
once per run (it is idle in about a second), taken down at the end. (test_slurm_containers.py brings
up one of its own whose nodes have Docker engines: `--slurm --docker`.)

slurmctld runs on this machine, each slurmd in a network and UTS namespace of its own on one
bridge, with 4 fake GPUs of type p100 per node (GRES). The portal submits with the real sbatch,
and its tasks run in the real steps, each as a sandboxed process.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dev-cluster.sh"
NODES = 3
NODE_CPUS = 2
NODE_MEMORY_MB = 4000
NODE_GPUS = 4


@dataclass(frozen=True)
class SlurmCluster:
    name: str  # also the partition's name
    state_dir: Path
    slurm_conf: str
    addresses: dict[str, str]  # node name -> address
    engines: dict[str, str]  # node name -> its Docker engine's URL (`--docker`), else none

    def run(self, *argv: str) -> str:
        env = {**os.environ, "SLURM_CONF": self.slurm_conf}
        return subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=60).stdout

    def restart_slurmctld(self, *, forget_jobs: bool = False) -> None:
        """forget_jobs: it comes back knowing no job, as when MinJobAge has passed for finished ones."""
        env = {**os.environ, "PAI_DEV_CLUSTER_DIR": str(self.state_dir)}
        argv = [
            "bash",
            str(SCRIPT),
            "restart-slurmctld",
            "--name",
            self.name,
            *(["--forget-jobs"] if forget_jobs else []),
        ]
        subprocess.run(argv, env=env, check=True, capture_output=True)

    def slurm_jobs(self, name: str) -> list[str]:
        """Slurm's ids for the jobs of this name it knows, finished ones included (one per submission)."""
        ids = self.run("squeue", "--noheader", "--states=all", f"--name={name}", "--format=%i").split()
        return sorted({slurm_id.split("+")[0] for slurm_id in ids})

    def active_jobs(self) -> list[str]:
        return self.run("squeue", "--noheader", f"--partition={self.name}", "--format=%i %j %T").splitlines()

    def wait_until_idle(self, timeout: float = 20) -> list[str]:
        """What is still active in the partition after up to `timeout` s (Slurm ends jobs asynchronously)."""
        deadline = time.monotonic() + timeout
        while (active := self.active_jobs()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return active

    def signal_slurmctld(self, signal: int) -> None:
        """SIGSTOP: slurmctld hangs (connections accepted, nothing answered); SIGCONT: it answers again."""
        pid = int((self.state_dir / self.name / "slurm" / "run" / "slurmctld.pid").read_text())
        os.kill(pid, signal)

    def cancel_all(self) -> None:
        self.run("scancel", f"--partition={self.name}")
        self.wait_until_idle()


def slurm_available() -> bool:
    tools = ("ip", "iptables", "nsenter", "slurmctld", "slurmd", "sbatch", "munged")
    return os.geteuid() == 0 and all(shutil.which(tool) for tool in tools)


def bring_up(tmp_path_factory, nodes: int, *options: str) -> Iterator[SlurmCluster]:
    """`dev-cluster.sh up NODES --slurm OPTIONS...` on a random name and subnet, down at the end."""
    name = f"s{uuid.uuid4().hex[:6]}"
    state_dir = tmp_path_factory.mktemp("slurm-cluster")
    env = {**os.environ, "PAI_DEV_CLUSTER_DIR": str(state_dir)}
    output = ""
    for _ in range(5):  # a random /24 of 10.248/16; another run may hold the one we drew
        done = subprocess.run(
            ["bash", str(SCRIPT), "up", str(nodes), "--slurm", *options, "--name", name,
             "--subnet", f"10.248.{random.randrange(256)}.0/24", "--cpus", str(NODE_CPUS),
             "--memory-mb", str(NODE_MEMORY_MB), "--gpus", str(NODE_GPUS), "--gpu-type", "p100"],
            env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        if done.returncode == 0:
            output = done.stdout
            break
        assert "is in use" in done.stderr, done.stderr[-2000:]
    assert output, "no free subnet for the Slurm dev cluster"
    lines = output.splitlines()
    conf = lines[-1].removeprefix("SLURM_CONF=")
    addresses = {line.split()[0]: line.split()[2] for line in lines[:-1]}
    engines = {line.split()[0]: line.split()[4] for line in lines[:-1] if len(line.split()) > 4}
    try:
        yield SlurmCluster(name, state_dir, conf, addresses, engines)
    finally:
        subprocess.run(["bash", str(SCRIPT), "down", "--name", name], env=env, capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory) -> Iterator[SlurmCluster]:
    require(slurm_available(), "root, slurm-wlm and munge for dev-cluster.sh --slurm")
    yield from bring_up(tmp_path_factory, NODES)


def make_slurm_vc(cluster: SlurmCluster, settings, tmp_path: Path):
    """A VC on the cluster's partition, made as an admin would (`createvc --slurm-partition`); each
    Slurm node that has an engine given it as `addnode NAME --executor slurm --docker-url URL` would."""
    from django.core.management import call_command

    from clusters.executors.registry import executor_for
    from clusters.models import Node, VirtualCluster

    settings.PAI_WORK_ROOT = tmp_path / "work"
    settings.PAI_LOG_DIR = tmp_path / "logs"
    settings.PAI_FS_ROOT = tmp_path / "fs"
    settings.PAI_SLURM_CONF = cluster.slurm_conf
    settings.PAI_SLURM_NODES_SECONDS = 0.5
    settings.PAI_SLURM_JOB_PREFIX = f"pt{uuid.uuid4().hex[:6]}"  # each test's database counts jobs from 1
    settings.PAI_DOCKER_NAMESPACE = settings.PAI_SLURM_JOB_PREFIX
    executor_for.cache_clear()
    call_command("createvc", "gpu", "--slurm-partition", cluster.name, stdout=io.StringIO())
    for node, url in cluster.engines.items():
        call_command("addnode", node, "--executor", "slurm", "--docker-url", url, stdout=io.StringIO())
    assert Node.objects.filter(executor="slurm").count() == len(cluster.addresses)
    return VirtualCluster.objects.get(name="gpu")


def slurm_vc_on(cluster: SlurmCluster, settings: Any, tmp_path: Path) -> Iterator[Any]:
    """A fixture's body: the VC of make_slurm_vc, then the cluster's jobs cancelled."""
    yield make_slurm_vc(cluster, settings, tmp_path)
    from clusters.executors.registry import executor_for

    executor_for.cache_clear()
    cluster.cancel_all()


@pytest.fixture
def slurm_vc(slurm_cluster, db, settings, tmp_path):
    yield from slurm_vc_on(slurm_cluster, settings, tmp_path)


@pytest.fixture
def run_until():
    """Scheduler passes until the job is in one of `states` (or `condition` holds)."""
    from scheduling.scheduler import Scheduler

    def run(job, *states: str, scheduler=None, timeout: float = 60.0, condition: Callable[[], bool] | None = None):
        scheduler = scheduler or Scheduler(holder="slurm-test")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            scheduler.run_once()
            job.refresh_from_db()
            if job.state in states or (condition is not None and condition()):
                return job
            time.sleep(0.05)
        raise AssertionError(f"job stayed {job.state}, wanted {states}; reason: {job.pending_reason!r}")

    return run
