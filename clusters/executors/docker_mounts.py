"""A Docker task's mounts as its engine gets them: binds (those below a folder a user's task can
write staged from a descriptor first, clusters.executors.staging), NFS exports as the engine's own
volumes, and a mount the engine could not make named in words."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from docker.types import DriverConfig
from docker.types import Mount as DockerMount

import clusters.userfs as userfs
from catalogue import Message
from clusters.executors import staging
from clusters.executors.base import ExecutorError, Failure, Mount, NfsVolume, TaskLaunch

log = logging.getLogger("pai.executors.docker")

STAGING_LABEL = "pai.staged-mounts"  # the container's staging folder (clusters.executors.staging)
# How the engine words a mount it could not make: a volume (NFS) at start, a bind source at create.
MOUNT_FAILURE_SIGNS = ("failed to mount local volume", "bind source path does not exist", "error while mounting volume")


class MountStaging:
    """A local engine's bind sources below a user-writable folder, staged under `mounts_dir`, by
    namespace; each task's in a folder of its own, released with its container. The folders' names
    start with the node's own prefix: nodes whose engines share this host (a dev cluster's) share the
    root, and a node sweeps only its own leftovers, never another's start under way."""

    def __init__(self, mounts_dir: Path | None, *, namespace: str, socket_path: str, address: str) -> None:
        self.root = Path(mounts_dir or staging.DEFAULT_MOUNTS_DIR) / namespace
        self.socket_path = socket_path  # the engine's (it must see the portal's mount namespace)
        self.address = address  # the node's, to name it in a refusal
        self.prefix = hashlib.sha256(f"{socket_path} {address}".encode()).hexdigest()[:8] + "."
        self._problem: Message | None = None
        self._probed = False
        self._lock = threading.Lock()
        self._now: set[Path] = set()  # staged for a container not created yet

    @property
    def problem(self) -> Message | None:
        """Why this node cannot stage mounts from a descriptor (None when it can; asked once)."""
        if not self._probed:
            self._problem, self._probed = staging.engine_problem(self.socket_path), True
        return self._problem

    def stage(self, mounts: list[Mount], name: str) -> tuple[list[Mount], Path | None]:
        """The mounts the engine gets: where a source lies below a folder a user's task can write
        (Mount.beneath), a staging folder holding what a no-follow walk opened; and the task's
        staging folder, if any (until created() is told, no listing takes it for a leftover)."""
        if not any(mount.beneath for mount in mounts):
            return mounts, None
        folder: Path | None = None
        result = []
        try:
            for index, mount in enumerate(mounts):
                names = _components(mount)
                if len(names) <= 1:  # the area itself: only the portal names things in its parent
                    with _refusal(mount):
                        staging.check_named(mount, names)
                    result.append(mount)
                    continue
                if self.problem:
                    raise ExecutorError(
                        Message.of(
                            "exit.start.unsafe_mount",
                            path=mount.host_path,
                            target=mount.container_path,
                            node=self.address,
                            problem=self.problem,
                        ),
                        Failure.STORAGE_MOUNT_FAILED,
                        storage=mount.storage,
                    )
                if folder is None:
                    with self._lock:
                        folder = staging.new_folder(self.root, self.prefix + name)
                        self._now.add(folder)
                with _refusal(mount):
                    result.append(staging.stage(mount, names, folder / str(index)))
        except BaseException:
            self.release(folder)
            self.created(folder)
            raise
        return result, folder

    def created(self, folder: Path | None) -> None:
        """The start that staged `folder` made its container, or gave up: from now on a listing
        judges the folder by the containers it finds."""
        with self._lock:
            self._now.discard(folder or Path())

    def release(self, folder: Path | None) -> None:
        """Detach a task's staged mounts (a folder of this staging root only)."""
        if folder is None or Path(os.path.normpath(folder)).parent != self.root:
            return
        try:
            staging.release(folder)
        except OSError as exc:
            log.warning("could not release the staged mounts in %s: %s", folder, exc)

    def leftovers(self) -> set[Path]:
        """The staging folders now, less those of starts under way. Taken before the containers are
        listed: a folder of a start that ends meanwhile has its container in the listing."""
        with self._lock:
            folders = set(self.root.glob(f"{self.prefix}*")) if self.root.is_dir() else set()
            return folders - self._now

    def release_unused(self, folders: set[Path], containers: list[dict[str, Any]]) -> None:
        """Staging folders of containers gone (removed outside the portal, or a crash between
        staging and creating)."""
        used = {Path(label) for c in containers if (label := (c.get("Labels") or {}).get(STAGING_LABEL))}
        for folder in folders - used:
            self.release(folder)


def _components(mount: Mount) -> list[str]:
    if not mount.beneath or mount.nfs is not None:
        return []
    try:
        return staging.components_below(mount)
    except userfs.UserFsError as exc:
        raise ExecutorError(
            Message.of("exit.start.cannot_mount", target=mount.container_path, said=str(exc)),
            Failure.STORAGE_MOUNT_FAILED,
        ) from exc


@contextlib.contextmanager
def _refusal(mount: Mount) -> Iterator[None]:
    """A link (or a file, or nothing) where a folder to mount was: a failed start naming it."""
    try:
        yield
    except (userfs.UserFsError, OSError) as exc:
        raise ExecutorError(
            Message.of("exit.start.cannot_mount_at", path=mount.host_path, target=mount.container_path, said=str(exc)),
            Failure.STORAGE_MOUNT_FAILED,
            storage=mount.storage,
        ) from exc


def storage_failure(launch: TaskLaunch, reason: str, *, namespace: str, address: str) -> ExecutorError | None:
    """The engine could not mount one of the task's storages: which one, and why, in words."""
    if not any(sign in reason for sign in MOUNT_FAILURE_SIGNS):
        return None
    for mount in launch.mounts:
        named = mount.host_path if mount.nfs is None else nfs_volume_name(mount.nfs, mount.read_only, namespace)
        if named and named in reason:
            where = {"target": mount.container_path, "node": address, "said": reason}
            message = (
                Message.of("exit.start.storage_not_mounted", storage=mount.storage, **where)
                if mount.storage
                else Message.of("exit.start.file_store_not_mounted", path=mount.host_path, **where)
            )
            return ExecutorError(message, Failure.STORAGE_MOUNT_FAILED, storage=mount.storage)
    return ExecutorError(
        Message.of("exit.start.some_storage_not_mounted", node=address, said=reason), Failure.STORAGE_MOUNT_FAILED
    )


def nfs_volume_options(nfs: NfsVolume, read_only: bool) -> dict[str, str]:
    """Docker's `local` driver mounts the export itself when a container using it starts (the node
    needs an NFS client: kernel support, as for `mount -t nfs`)."""
    options = [
        f"addr={nfs.server}",
        "ro" if read_only else "rw",
        *(o.strip() for o in nfs.options.split(",") if o.strip()),
    ]
    return {"type": "nfs", "o": ",".join(options), "device": f":{nfs.export}"}


def nfs_volume_name(nfs: NfsVolume, read_only: bool, namespace: str) -> str:
    """One named volume per export, subfolder and options: tasks that mount the same share it, and a
    changed storage config makes a new one instead of reusing stale options."""
    options = nfs_volume_options(nfs, read_only)
    digest = hashlib.sha256("\n".join(f"{k}={options[k]}" for k in sorted(options)).encode()).hexdigest()[:20]
    return f"{namespace}-nfs-{digest}"


def docker_mount(mount: Mount, namespace: str) -> DockerMount:
    if mount.nfs is None:
        return DockerMount(target=mount.container_path, source=mount.host_path, type="bind", read_only=mount.read_only)
    return DockerMount(
        target=mount.container_path,
        source=nfs_volume_name(mount.nfs, mount.read_only, namespace),
        type="volume",
        read_only=mount.read_only,
        driver_config=DriverConfig("local", options=nfs_volume_options(mount.nfs, mount.read_only)),
    )
