"""One executor instance per node, built from the node's plain settings (no model objects)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from django.conf import settings

from clusters.executors.base import Executor
from clusters.job_files import PROCESS, SLURM, work_root


@cache
def executor_for(kind: str, address: str, docker_url: str = "") -> Executor:
    if kind == "process":
        from clusters.executors.netns import TaskNetwork
        from clusters.executors.process import ProcessExecutor
        from clusters.executors.sandbox import Sandbox

        return ProcessExecutor(
            work_root(PROCESS),
            address=address,
            sandbox=Sandbox(
                hidden=portal_paths(),
                base_id=settings.PAI_SANDBOX_BASE_ID,
                network=TaskNetwork(docker_subnet_pool=settings.PAI_DOCKER_SUBNET_POOL),
            ),
            log_max_bytes=settings.PAI_TASK_LOG_MAX_BYTES,
            pids_limit=settings.PAI_TASK_PIDS_LIMIT,
        )
    if kind == "slurm" and docker_url:  # a Slurm node with a Docker engine: tasks in containers
        from clusters.executors.slurm import SlurmContainerExecutor

        return SlurmContainerExecutor(
            work_root(SLURM),
            docker_url,
            address=address,
            namespace=settings.PAI_DOCKER_NAMESPACE,
            log_max_bytes=settings.PAI_TASK_LOG_MAX_BYTES,
            pids_limit=settings.PAI_TASK_PIDS_LIMIT,
        )
    if kind == "slurm":
        from clusters.executors.sandbox import Sandbox
        from clusters.executors.slurm import SlurmTaskExecutor

        return SlurmTaskExecutor(
            work_root(SLURM),
            address,
            sandbox=Sandbox(hidden=portal_paths(), base_id=settings.PAI_SANDBOX_BASE_ID),
            log_max_bytes=settings.PAI_TASK_LOG_MAX_BYTES,
            pids_limit=settings.PAI_TASK_PIDS_LIMIT,
        )
    if kind == "docker":
        from clusters.executors.docker import DockerExecutor

        return DockerExecutor(
            docker_url or None,
            address=address,
            namespace=settings.PAI_DOCKER_NAMESPACE,
            subnet_pool=settings.PAI_DOCKER_SUBNET_POOL,
            log_max_bytes=settings.PAI_TASK_LOG_MAX_BYTES,
            pids_limit=settings.PAI_TASK_PIDS_LIMIT,
            unlimited_memlock=settings.PAI_DOCKER_UNLIMITED_MEMLOCK,
        )
    raise ValueError(f"unknown executor kind {kind!r}")


def portal_paths() -> tuple[str, ...]:
    """The portal's own directories, which a sandboxed task must never see: its code and var/
    (database, secret key), logs, every task's work dir, every user's storage area."""
    paths = {settings.BASE_DIR, settings.VAR_DIR, settings.PAI_LOG_DIR, settings.PAI_WORK_ROOT, settings.PAI_FS_ROOT}
    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        paths.add(Path(database["NAME"]).parent)
    return tuple(sorted(str(Path(path).resolve()) for path in paths))


def describe_executor(kind: str, address: str, docker_url: str = "") -> str:
    """What running on this executor means for a job, in a sentence (printed by `make run`)."""
    if kind == "slurm" and docker_url:
        return (
            f"Slurm node with a Docker engine ({docker_url}): each task in a container of the job's image, "
            f"on the node's network, its ports on {address}."
        )
    if kind == "docker":
        return (
            f"Docker executor ({docker_url or 'local engine'}): each task in its own container with its "
            f"limits; tasks' ports open on {address}."
        )
    from clusters.executors.process import ProcessExecutor

    executor = executor_for(kind, address, docker_url)
    assert isinstance(executor, ProcessExecutor)
    limits = "cgroup limits" if executor.cgroups is not None else "rlimit limits (no CPU limit)"
    if executor.sandbox_problem:
        return (
            f"process executor WITHOUT a sandbox ({executor.sandbox_problem}): only admins' jobs run here, as the "
            "portal's own user; everyone else's fail to start and say why. Install Docker or bubblewrap."
        )
    return (
        f"process executor: each task a local process in a bubblewrap sandbox (its own unprivileged uid, only "
        f"its work dir and storage area, none of the portal's files), {limits}; each task in a network of its "
        f"own (pasta): only its declared ports, on {address}; no host loopback, no Docker networks."
    )
