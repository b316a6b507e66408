"""Bind mounts of folders a user's task can swap, made from a descriptor (issue 27).

A local Docker engine (root, the host's mount namespace) mounts a bind source by its path when it
creates a container. Between the portal's checks and that moment, a running task of the same user
can swap a folder of its area (`area/out`) for a link to the portal's var/ or to `/`, and the new
container would get the link's target. So the portal opens such a folder itself, walking down from
the directory no task can write (`Mount.beneath`) with clusters.userfs (no link followed at any
step), bind-mounts what that descriptor holds (the source `/proc/self/fd/N` is the open directory
itself: nothing is looked up by name again) onto a staging folder of its own, and hands the engine
the staging folder. A direct child of `beneath` (the area itself) is named as it is: only the
portal changes the names there.

The staging folders live in a directory of the portal's (0700), made a private mount so no mount
below it propagates into other mount namespaces (running containers with a shared view, services
with a private /tmp); each staged mount is private too and read-only where the Mount says so. They
are released (detached, then the empty folder removed; never anything below it) when the
container is removed, and whatever a crash left behind is swept on the next listing.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import os
import secrets
import socket
import struct
from pathlib import Path, PurePosixPath

import clusters.userfs as userfs
from catalogue import Message
from clusters.executors.base import Mount

MS_RDONLY = 0x1
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_PRIVATE = 1 << 18
MNT_DETACH = 0x2
DEFAULT_MOUNTS_DIR = Path("/run/pai-portal/docker-mounts")  # (tmpfs: goes with the mounts on a reboot)

_libc = ctypes.CDLL(None, use_errno=True)


def components_below(mount: Mount) -> list[str]:
    """The names leading from `mount.beneath` to its host path ([] when it is `beneath` itself)."""
    top = PurePosixPath(os.path.normpath(mount.beneath))
    path = PurePosixPath(os.path.normpath(mount.host_path))
    if path != top and top not in path.parents:
        raise userfs.UserFsError(mount.host_path, f"not below {mount.beneath}")
    return userfs.parts(path.relative_to(top))


def check_named(mount: Mount, names: list[str]) -> None:
    """A direct child of `beneath` (the engine mounts it by its name): a folder, not a link."""
    if names:
        with userfs.opened_root(mount.beneath) as top:
            os.close(userfs.open_dir(top, names[0]))


def stage(mount: Mount, names: list[str], folder: Path) -> Mount:
    """The mount with its source bind-mounted from a no-follow walk onto `folder` (made here)."""
    with userfs.opened_root(mount.beneath) as top:
        source = userfs.open_dir(top, "/".join(names))
    try:
        folder.mkdir(mode=0o700)
        _mount(f"/proc/self/fd/{source}", folder, MS_BIND)
    finally:
        os.close(source)
    _mount(None, folder, MS_PRIVATE)
    if mount.read_only:
        _mount(None, folder, MS_BIND | MS_REMOUNT | MS_RDONLY)
    return dataclasses.replace(mount, host_path=str(folder), beneath="")


def new_folder(root: Path, name: str) -> Path:
    """A task's own staging folder, below the private staging root (made when missing)."""
    make_private_root(root.parent)
    root.mkdir(mode=0o700, exist_ok=True)
    folder = root / f"{name}.{secrets.token_hex(4)}"
    folder.mkdir(mode=0o700)
    return folder


def make_private_root(root: Path) -> None:
    """The staging root: the portal's alone, a mount of its own that propagates nothing."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    root = root.resolve()
    os.chmod(root, 0o700)
    if str(root) not in mount_points():
        _mount(str(root), root, MS_BIND)
    _mount(None, root, MS_PRIVATE)


def release(folder: Path) -> None:
    """Detach every staged mount of a task's staging folder and remove the (empty) folders: rmdir
    only, so nothing of a user's is removed should a detach not have happened."""
    if not folder.is_dir():
        return
    for child in folder.iterdir():
        while _detach(child):
            pass  # (a folder mounted over twice: each goes)
        os.rmdir(child)
    os.rmdir(folder)


def mount_points() -> set[str]:
    with open("/proc/self/mountinfo") as mountinfo:
        return {_unescape(line.split()[4]) for line in mountinfo}


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def engine_problem(socket_path: str) -> Message | None:
    """Why mounts staged here would not be what the engine at this Unix socket sees (None when they
    are): it must run in this very mount namespace, and the portal must be root to mount."""
    if os.geteuid() != 0:
        return Message.of("exit.staging.not_root")
    ucred = struct.Struct("3i")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(5)
            connection.connect(socket_path)
            pid = ucred.unpack(connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, ucred.size))[0]
        if pid <= 0:
            return Message.of("exit.staging.other_pids")
        if os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt"):
            return Message.of("exit.staging.other_mounts")
    except OSError as exc:
        return Message.of("exit.staging.unseen", socket=socket_path, said=exc.strerror or str(exc))
    return None


def _mount(source: str | None, target: Path, flags: int) -> None:
    if _libc.mount(source.encode() if source else None, str(target).encode(), None, flags, None) != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number), str(target))


def _detach(target: Path) -> bool:
    """Detach the mount at target; False when there is none (any more)."""
    if _libc.umount2(str(target).encode(), MNT_DETACH) == 0:
        return True
    number = ctypes.get_errno()
    if number in {errno.EINVAL, errno.ENOENT}:
        return False
    raise OSError(number, os.strerror(number), str(target))
