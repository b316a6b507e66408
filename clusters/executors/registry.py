"""One executor instance per node, built from the node's plain settings (no model objects)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from django.conf import settings

from clusters.executors.base import Executor


@cache
def executor_for(kind: str, address: str, docker_url: str = "") -> Executor:
    if kind == "process":
        from clusters.executors.process import ProcessExecutor

        return ProcessExecutor(Path(settings.PAI_WORK_ROOT) / "process", address=address)
    if kind == "docker":
        from clusters.executors.docker import DockerExecutor

        return DockerExecutor(
            docker_url or None,
            address=address,
            namespace=settings.PAI_DOCKER_NAMESPACE,
            subnet_pool=settings.PAI_DOCKER_SUBNET_POOL,
        )
    raise ValueError(f"unknown executor kind {kind!r}")
