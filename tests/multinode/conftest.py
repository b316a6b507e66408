"""A real two-node cluster for the tests of this package: `scripts/dev-cluster.sh up 2`, once per run.

Each node is a dockerd in a network namespace of its own on one bridge, so a job's tasks on the
two nodes cross a real network at two different addresses. The cluster gets a name and a subnet of
its own (runs side by side on one machine never meet) and is taken down with `down` at the end.
"""

from __future__ import annotations

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
from tests.docker import conftest as docker_fixtures
from tests.docker.conftest import remove_namespace

# The Docker tests' fixtures, shared: the local engine with the base image, a namespace per test.
docker_engine = docker_fixtures.docker_engine
namespace = docker_fixtures.namespace

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dev-cluster.sh"
NODE_CPUS = 2
NODE_MEMORY_MB = 4096


@dataclass(frozen=True)
class Engine:
    index: int  # 1, 2, ... as dev-cluster.sh numbers them
    name: str
    docker_url: str
    address: str


@dataclass(frozen=True)
class DevCluster:
    name: str
    state_dir: Path
    engines: list[Engine]

    def run(self, *args: str) -> str:
        env = {**os.environ, "PAI_DEV_CLUSTER_DIR": str(self.state_dir)}
        done = subprocess.run(
            ["bash", str(SCRIPT), *args, "--name", self.name], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"dev-cluster.sh {' '.join(args)}: {done.stderr[-2000:]}"
        return done.stdout

    def stop_engine(self, engine: Engine) -> None:
        self.run("stop-node", str(engine.index))

    def start_engine(self, engine: Engine) -> None:
        self.run("start-node", str(engine.index))


def parse_status(text: str) -> list[Engine]:
    """`status` lines: name, engine URL, address, up/down."""
    engines = []
    for line in text.splitlines():
        name, url, address, _ = line.split()
        engines.append(Engine(int(name.rsplit("-", 1)[1]), name, url, address))
    return engines


def cluster_tools_available() -> bool:
    return os.geteuid() == 0 and all(shutil.which(tool) for tool in ("ip", "iptables", "nsenter", "dockerd"))


@pytest.fixture(scope="session")
def dev_cluster(docker_engine, tmp_path_factory) -> Iterator[DevCluster]:
    require(cluster_tools_available(), "root, iproute2, iptables, nsenter and dockerd for dev-cluster.sh")
    cluster = DevCluster(f"pt{uuid.uuid4().hex[:6]}", tmp_path_factory.mktemp("dev-cluster"), [])
    output = ""
    for _ in range(5):  # a random /24 of 10.251/16; another run may hold the one we drew
        subnet = f"10.251.{random.randrange(256)}.0/24"
        env = {**os.environ, "PAI_DEV_CLUSTER_DIR": str(cluster.state_dir)}
        done = subprocess.run(
            ["bash", str(SCRIPT), "up", "2", "--name", cluster.name, "--subnet", subnet, "--no-register",
             "--cpus", str(NODE_CPUS), "--memory-mb", str(NODE_MEMORY_MB)],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode == 0:
            output = done.stdout
            break
        assert "is in use" in done.stderr, done.stderr[-2000:]
    assert output, "no free subnet for the dev cluster"
    cluster = DevCluster(cluster.name, cluster.state_dir, parse_status(output))
    try:
        yield cluster
    finally:
        cluster.run("down")


@pytest.fixture
def cluster_nodes(dev_cluster, db, settings, tmp_path, namespace):
    """The dev cluster's engines as the portal's nodes (and no other node), in a namespace of this test."""
    import docker

    from clusters.executors.registry import executor_for
    from clusters.models import Node

    settings.PAI_WORK_ROOT = tmp_path / "work"
    settings.PAI_LOG_DIR = tmp_path / "logs"
    settings.PAI_FS_ROOT = tmp_path / "fs"
    settings.PAI_DOCKER_NAMESPACE = namespace
    executor_for.cache_clear()
    nodes = [
        Node.objects.create(
            name=engine.name,
            executor="docker",
            docker_url=engine.docker_url,
            address=engine.address,
            cpus=NODE_CPUS,
            memory_mb=NODE_MEMORY_MB,
        )
        for engine in dev_cluster.engines
    ]
    yield nodes
    executor_for.cache_clear()
    for engine in dev_cluster.engines:
        dev_cluster.start_engine(engine)  # a test that stopped one leaves it running again
        remove_namespace(docker.APIClient(base_url=engine.docker_url, timeout=60), namespace)


@pytest.fixture
def wait_for() -> Callable[..., None]:
    """Run scheduler passes (or anything) until a condition holds."""

    def wait(condition: Callable[[], bool], step: Callable[[], object], what: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            step()
            time.sleep(0.1)

    return wait


def run_to_end(job: Any, scheduler: Any, timeout: float = 120.0) -> None:
    """Scheduler passes until the job has finished (the job refreshed from the database)."""
    deadline = time.monotonic() + timeout
    while not job.is_finished:
        assert time.monotonic() < deadline, f"job stayed {job.state}: {job.pending_reason}"
        scheduler.run_once()
        time.sleep(0.1)
        job.refresh_from_db()
