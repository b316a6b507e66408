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
        from clusters.executors.sandbox import Sandbox

        return ProcessExecutor(
            Path(settings.PAI_WORK_ROOT) / "process",
            address=address,
            sandbox=Sandbox(hidden=portal_paths(), base_id=settings.PAI_SANDBOX_BASE_ID),
            log_max_bytes=settings.PAI_TASK_LOG_MAX_BYTES,
            pids_limit=settings.PAI_TASK_PIDS_LIMIT,
        )
    if kind == "docker":
        from clusters.executors.docker import DockerExecutor  # type: ignore[import-not-found,unused-ignore]

        return DockerExecutor(  # type: ignore[no-any-return,unused-ignore]
            docker_url or None,
            address=address,
            log_max_bytes=settings.PAI_TASK_LOG_MAX_BYTES,
            pids_limit=settings.PAI_TASK_PIDS_LIMIT,
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
