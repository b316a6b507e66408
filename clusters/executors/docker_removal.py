"""Removing an executor's containers, with as few engine calls as an exit needs.

A container goes with what it left on the node: its task's script (command.sh holds the job's
secrets: on a local engine it is in the runtime folder bind-mounted from the node) and its staged
mounts (docker_mounts.py), both named by its inspection. The poll that found it exited inspected it
already: what it named is kept (`exited`), so its removal is one call, not three. A container this
executor removed is not asked about again (the job's stop after its task's, in the same pass).
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

from docker.errors import APIError, NotFound

from clusters.executors.docker_engine import Engine
from clusters.executors.docker_logs import ContainerLogs
from clusters.executors.docker_mounts import STAGING_LABEL, MountStaging

CONTAINER_RUNTIME_DIR = "pai/runtime"  # relative to / inside the container (tar member names)
SCRIPT_NAME = "command.sh"
REMEMBERED = 4096  # removed containers (and exited ones not removed yet) kept in mind, the newest


class Removals:
    """One engine's container removals (`local`: the engine's binds are this machine's folders)."""

    def __init__(self, engine: Engine, staging: MountStaging, logs: ContainerLogs, *, local: bool) -> None:
        self.engine, self.staging, self.logs, self.local = engine, staging, logs, local
        self._exited: OrderedDict[str, tuple[str, str]] = OrderedDict()  # id: (runtime folder, staged folder)
        self._removed: OrderedDict[str, None] = OrderedDict()

    def exited(self, info: dict[str, Any]) -> None:
        """An inspection found the container exited: what its removal needs, kept."""
        if self.local:
            _remember(self._exited, info["Id"], _left_on_node(info))

    def removed(self, container_id: str) -> bool:
        """Whether this executor removed the container (among the newest REMEMBERED)."""
        return container_id in self._removed

    def remove(self, container_id: str, *, script: bool = False) -> None:
        """The container removed (`script`: its task's script first); NotFound is no error."""
        if container_id in self._removed:
            return
        runtime, staged = "", ""
        if self.local:
            known = self._exited.pop(container_id, None)
            if known is None:
                try:
                    known = _left_on_node(self.engine.api.inspect_container(container_id))
                except NotFound:
                    known = ("", "")
            runtime, staged = known
        if script and runtime:
            (Path(runtime) / SCRIPT_NAME).unlink(missing_ok=True)
        try:
            self.engine.api.remove_container(container_id, force=True)
        except NotFound:
            pass
        except APIError as exc:
            if "already in progress" not in str(exc):
                raise
        if staged:
            self.staging.release(Path(staged))
        self.logs.forget(container_id)
        _remember(self._removed, container_id, None)


def _left_on_node(info: dict[str, Any]) -> tuple[str, str]:
    """(its runtime folder on the node, its staging folder) from the container's inspection."""
    runtime = next(
        (
            mount.get("Source") or ""
            for mount in info.get("Mounts") or []
            if mount.get("Destination") == f"/{CONTAINER_RUNTIME_DIR}"
        ),
        "",
    )
    return runtime, ((info.get("Config") or {}).get("Labels") or {}).get(STAGING_LABEL) or ""


def _remember(kept: OrderedDict[str, Any], key: str, value: Any) -> None:
    kept[key] = value
    while len(kept) > REMEMBERED:
        kept.popitem(last=False)
