"""Fixtures for SSH into jobs: jobs with keys, and a task's sshd in a real container."""

from __future__ import annotations

import contextlib
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from clusters.models import Node
from jobs.models import Job, Task, TaskState
from jobs.protocol.spec import NormalizedSpec
from jobs.ssh import authorized_keys_for, task_ssh_env, task_ssh_secret_env
from tests.conftest import CHROMIUM, launched_chromium, require
from tests.factories import create_job, default_image, normalized_spec

RUNTIME_DIR = Path(settings.BASE_DIR) / "clusters" / "executors" / "runtime"


def job_spec(name: str, roles: dict[str, int], extras: dict[str, Any] | None = None) -> NormalizedSpec:
    return normalized_spec(name, roles, command="sleep infinity", extras=extras or {})


@pytest.fixture
def make_job(db: Any, user: Any) -> Callable[..., Job]:
    """A submitted job with its key pair and WAITING tasks (what submit_job leaves behind)."""

    def make(
        owner: Any = None, name: str = "ssh-demo", roles: dict[str, int] | None = None, extras: dict | None = None
    ) -> Job:
        roles = roles or {"worker": 1}
        return create_job(owner or user, name, roles=roles, spec=job_spec(name, roles, extras), keypair=True)

    return make


@pytest.fixture
def docker_node(db: Any) -> Node:
    return Node.objects.create(name="local-docker", address="127.0.0.1", executor=Node.Executor.DOCKER)


def _docker_client() -> Any:
    try:
        import docker

        client = docker.from_env()
        client.ping()
        return client
    except Exception:
        return None


@pytest.fixture(scope="session")
def docker_client() -> Any:
    client = _docker_client()
    require(client is not None, "a Docker engine (bash scripts/ensure-dockerd.sh)")
    try:
        client.images.get(default_image())
    except Exception:
        require(False, f"the base image {default_image()} (make image)")
    return client


@dataclass
class SshContainers:
    """Start task containers the way the Docker executor lays them out (/pai/runtime)."""

    client: Any
    tmp_path: Path
    network: Any = None
    containers: list[Any] = field(default_factory=list)

    def start(
        self,
        job: Job,
        role: str,
        index: int,
        command: str = "sleep infinity",
        env: dict[str, str] | None = None,
        ssh_port: int = 22,
    ) -> Any:
        if self.network is None:
            self.network = self.client.networks.create(f"pai-ssh-test-{job.pk}-{time.monotonic_ns()}")
        runtime = self.tmp_path / f"{role}-{index}"
        runtime.mkdir()
        shutil.copy(RUNTIME_DIR / "ssh.sh", runtime / "ssh.sh")
        (runtime / "authorized_keys").write_text(authorized_keys_for(job))
        (runtime / "environment").write_text(f'PAI_JOB_NAME="{job.name}"\n')
        (runtime / "command.sh").write_text(command + "\n")
        script = (
            "cat /pai/runtime/environment >> /etc/environment; "
            "bash /pai/runtime/ssh.sh || exit $?; exec bash /pai/runtime/command.sh"
        )
        alias = f"{role}-{index}"
        container = self.client.containers.create(
            default_image(),
            ["sh", "-c", script],
            hostname=alias,
            environment={"PAI_JOB_NAME": job.name, **task_ssh_env(job), **task_ssh_secret_env(job), **(env or {})},
            volumes={str(runtime): {"bind": "/pai/runtime", "mode": "ro"}},
            ports={f"{ssh_port}/tcp": ("127.0.0.1", None)},
            network=self.network.name,
            networking_config={self.network.name: self.client.api.create_endpoint_config(aliases=[alias])},
            labels={"pai.test": "ssh"},
        )
        self.containers.append(container)
        container.start()
        return container

    def host_port(self, container: Any, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            container.reload()
            for bindings in (container.attrs["NetworkSettings"]["Ports"] or {}).values():
                if bindings:
                    return int(bindings[0]["HostPort"])
            time.sleep(0.05)
        raise AssertionError(f"no published ssh port; logs: {container.logs().decode()}")

    def wait_for_sshd(self, container: Any, timeout: float = 15.0) -> int:
        """The published port, once the task's sshd sends its banner there."""
        port = self.host_port(container)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                    if conn.recv(4) == b"SSH-":
                        return port
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"sshd does not answer; logs: {container.logs().decode()}")

    def record_running(self, job: Job, role: str, index: int, container: Any, node: Node) -> Task:
        """What the scheduler records for a started task: RUNNING, node, published ssh port."""
        task = job.tasks.get(role=role, index=index)
        task.state = TaskState.RUNNING
        task.node = node
        task.ports = {"ssh": [self.wait_for_sshd(container)]}
        task.executor_id = container.id
        task.save()
        return task

    def cleanup(self) -> None:
        for container in self.containers:
            with contextlib.suppress(Exception):
                container.remove(force=True)
        if self.network is not None:
            with contextlib.suppress(Exception):
                self.network.remove()


@pytest.fixture
def ssh_containers(docker_client: Any, tmp_path: Path) -> Iterator[SshContainers]:
    helper = SshContainers(docker_client, tmp_path)
    yield helper
    helper.cleanup()


@pytest.fixture
def chromium() -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """Debian's Chromium through Playwright (never a downloaded browser), as a context manager:
    Playwright's sync API runs an event loop, so the test touches the database before entering it."""
    require(Path(CHROMIUM).exists(), "Debian chromium (apt-get install chromium)")
    return launched_chromium
