"""Real Docker fixtures: an executor in a namespace of its own per test, cleaned up afterwards.

Every container and network a test makes carries the test's namespace, so tests running at the
same time on one engine (or leftovers of an earlier run) never see each other.
"""

import subprocess
import time
import uuid

import pytest

from clusters.executors.base import TaskLaunch
from clusters.executors.docker import MARKER_LABEL, DockerExecutor
from tests.conftest import require
from tests.factories import default_image


def docker_engine_ready() -> bool:
    try:
        import docker

        api = docker.APIClient(timeout=10)
        api.ping()
        api.inspect_image(default_image())
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def docker_engine():
    require(
        docker_engine_ready(), f"a Docker engine with {default_image()} (bash scripts/ensure-dockerd.sh; make image)"
    )


@pytest.fixture
def namespace():
    return f"pait{uuid.uuid4().hex[:8]}"


@pytest.fixture
def executor(docker_engine, namespace):
    executor = DockerExecutor(namespace=namespace)
    yield executor
    remove_namespace(executor.api, namespace)


def remove_namespace(api, namespace: str, mounts_dir=None) -> None:
    for container in api.containers(all=True, filters={"label": f"{MARKER_LABEL}={namespace}"}):
        api.remove_container(container["Id"], force=True)
    for network in api.networks(filters={"label": f"{MARKER_LABEL}={namespace}"}):
        api.remove_network(network["Id"])
    DockerExecutor(namespace=namespace, mounts_dir=mounts_dir).list_running()  # (releases their staged mounts)


@pytest.fixture
def job_id():
    """Job ids unique enough to not share a subnet slot with a concurrent test."""
    return uuid.uuid4().int % 100_000 + 1


@pytest.fixture
def launch_for(tmp_path, job_id):
    """Build a TaskLaunch with test defaults; keyword arguments override any field."""

    def build(role: str = "worker", index: int = 0, command: str = "true", **fields) -> TaskLaunch:
        values = dict(
            job_id=job_id,
            job_name="alice~test-job",
            job_attempt=1,
            role=role,
            index=index,
            task_attempt=1,
            image=default_image(),
            command=command,
            env={"PAI_WORK_DIR": "/pai/work"},
            cpu=1,
            memory_mb=256,
            shm_mb=64,
            gpus=[],
            ports={},
            log_path=tmp_path / "logs" / f"{role}-{index}.log",
            work_dir=tmp_path / "work" / f"{role}-{index}",
        )
        values.update(fields)
        return TaskLaunch(**values)

    return build


def docker_cli(*args: str) -> str:
    return subprocess.run(["/usr/bin/docker", *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def wait_exit(executor):
    """Poll a task until it has exited; returns its TaskStatus."""

    def wait(handle, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = executor.poll(handle)
            if not status.running:
                return status
            time.sleep(0.1)
        raise AssertionError(f"task {handle.executor_id[:12]} still running after {timeout}s")

    return wait


# -- end to end: jobs through jobs.actions and the real scheduler loop on a Docker node --------


@pytest.fixture
def docker_node(docker_engine, db, settings, tmp_path, monkeypatch, namespace):
    import docker

    from clusters.executors.registry import executor_for
    from clusters.models import Node

    settings.PAI_WORK_ROOT = tmp_path / "work"
    settings.PAI_LOG_DIR = tmp_path / "logs"
    settings.PAI_FS_ROOT = tmp_path / "fs"
    settings.PAI_DOCKER_NAMESPACE = namespace
    executor_for.cache_clear()
    yield Node.objects.create(name="docker-local", executor="docker", address="127.0.0.1", cpus=16, memory_mb=32768)
    executor_for.cache_clear()
    remove_namespace(docker.APIClient(timeout=60), namespace)


@pytest.fixture
def new_scheduler():
    """A scheduler as a fresh process would make it: new executor objects, same machine."""
    from clusters.executors.registry import executor_for
    from scheduling.scheduler import Scheduler

    def make():
        executor_for.cache_clear()
        return Scheduler(holder="docker-test-scheduler")

    return make


@pytest.fixture
def scheduler(new_scheduler):
    return new_scheduler()


@pytest.fixture
def run_until(scheduler):
    def run(job, *states: str, timeout: float = 60.0, using=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            (using or scheduler).run_once()
            job.refresh_from_db()
            if job.state in states:
                return job
            time.sleep(0.1)
        raise AssertionError(f"job stayed {job.state}, wanted {states}; reason: {job.pending_reason!r}")

    return run
