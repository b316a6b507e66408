"""What an admin's storage config may name (StorageConfig.clean): a storage mounted into users'
tasks, and browsed by the portal as root, must not be the machine itself. Pure: the portal's own
directories come in as arguments.

- Host paths (on the nodes, and where the portal reads a storage): not `/`, not a system directory,
  not the portal's own files (its code and PAI_VAR_DIR: the secret key, the database), nor a
  directory that holds them.
- Mount points (where tasks see it): not `/`, nor over the kernel's files (/proc, /sys, /dev).
- NFS options: known names only, values checked, nothing that could smuggle another option in.
"""

from __future__ import annotations

import contextlib
import ipaddress
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path

# Whole trees: a task with any of these (or the portal browsing them) owns the machine.
SYSTEM_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root", "/run",
    "/sbin", "/sys", "/usr", "/var/lib", "/var/run", "/var/log", "/var/spool", "/var/cache", "/var/backups",
    "/var/mail", "/snap",
)  # fmt: skip
# The directories themselves, not what an admin keeps below them (/var/nfs, /home/shared).
SYSTEM_DIRECTORIES = ("/", "/var", "/home", "/opt", "/srv", "/mnt", "/media", "/tmp")
KERNEL_TREES = ("/proc", "/sys", "/dev")

_NUMBER = r"\d{1,10}"
_VERSIONS = ("2", "3", "4", "4.0", "4.1", "4.2")
# name -> the values it takes: None takes none, a tuple one of those, a string a regular expression.
NFS_OPTIONS: dict[str, tuple[str, ...] | str | None] = {
    "vers": _VERSIONS,
    "nfsvers": _VERSIONS,
    "minorversion": ("0", "1", "2"),
    "proto": ("tcp", "udp", "tcp6", "udp6", "rdma", "rdma6"),
    "mountproto": ("tcp", "udp", "tcp6", "udp6"),
    "sec": ("sys", "none", "krb5", "krb5i", "krb5p"),
    "lookupcache": ("all", "none", "pos", "positive"),
    "local_lock": ("none", "all", "flock", "posix"),
    **dict.fromkeys(
        ("rsize", "wsize", "timeo", "retrans", "retry", "acregmin", "acregmax", "acdirmin", "acdirmax", "actimeo"),
        _NUMBER,
    ),
    **dict.fromkeys(("nconnect", "namlen", "mountvers", "port", "mountport"), _NUMBER),
    **dict.fromkeys(
        (
            "hard",
            "soft",
            "softerr",
            "intr",
            "nointr",
            "noatime",
            "atime",
            "nodiratime",
            "relatime",
            "nolock",
            "lock",
            "noac",
            "ac",
            "nocto",
            "cto",
            "sync",
            "async",
            "nosuid",
            "nodev",
            "noexec",
            "bg",
            "fg",
            "sharecache",
            "nosharecache",
            "resvport",
            "noresvport",
            "rdirplus",
            "nordirplus",
            "fsc",
            "nofsc",
        ),
        None,
    ),
}
SET_BY_PORTAL = ("addr", "ro", "rw")
PORTS = ("port", "mountport")


def _normal(path: str) -> str:
    """`//a/./b/` -> `/a/b` (POSIX leaves a leading `//` alone; the kernel does not)."""
    return "/" + posixpath.normpath(path).lstrip("/")


def _is_within(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def _spellings(path: str) -> set[str]:
    """The path as written and, where it exists on this machine, with its links resolved."""
    spellings = {_normal(path)}
    with contextlib.suppress(OSError, RuntimeError):
        spellings.add(str(Path(path).resolve()))
    return spellings


def host_path_error(path: str, portal_dirs: Iterable[Path]) -> str | None:
    """Why a host path may not be a storage, or None."""
    for spelling in _spellings(path):
        if spelling == "/":
            return "may not be / (the whole machine)"
        for own in portal_dirs:
            own_path = str(own.resolve())
            if _is_within(spelling, own_path) or _is_within(own_path, spelling):
                return f"may not hold or be inside the portal's own files ({own_path})"
        tree = next((tree for tree in SYSTEM_TREES if _is_within(spelling, tree)), None)
        if tree is not None or spelling in SYSTEM_DIRECTORIES:
            return f"may not be a system directory ({tree or spelling})"
    return None


def mount_point_error(path: str) -> str | None:
    """Why tasks may not see a storage at this path, or None."""
    normal = _normal(path)
    if normal == "/":
        return "may not be / (the task's whole file system)"
    tree = next((tree for tree in KERNEL_TREES if _is_within(normal, tree)), None)
    if tree is not None:
        return f"may not be over the kernel's files ({tree})"
    return None


def nfs_options_errors(options: str) -> list[str]:
    """What is wrong with an NFS option string (`name[=value],...`), one message per option."""
    if not options:
        return []
    if any(c.isspace() or not c.isprintable() for c in options):
        return ["no spaces or line breaks: options are name or name=value, separated by commas"]
    errors = []
    for option in options.split(","):
        name, has_value, value = option.partition("=")
        error = _nfs_option_error(name, value if has_value else None)
        if error:
            errors.append(error)
    return errors


def _nfs_option_error(name: str, value: str | None) -> str | None:
    if not name:
        return "an empty option (two commas, or one at either end)"
    if name in SET_BY_PORTAL:
        return "addr, ro and rw are set by the portal (server, read only)"
    if name == "clientaddr":
        return None if _is_address(value or "") else "clientaddr must be an IP address"
    if name not in NFS_OPTIONS:
        return f"unknown NFS option {name} (known: {', '.join(sorted([*NFS_OPTIONS, 'clientaddr']))})"
    allowed = NFS_OPTIONS[name]
    if allowed is None:
        return None if value is None else f"{name} takes no value"
    if value is None:
        return f"{name} needs a value"
    if isinstance(allowed, tuple):
        return None if value in allowed else f"{name} must be one of {', '.join(allowed)}"
    if not re.fullmatch(allowed, value) or (name in PORTS and int(value) > 65535):
        return f"{name} must be a number" + (" (at most 65535)" if name in PORTS else "")
    return None


def _is_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
