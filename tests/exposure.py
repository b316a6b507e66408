"""Where a secret value could show on the host: the process list and files at rest (issue 27)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def sha256_of(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def echo_hash_of(value: str) -> str:
    """A command that prints the value's sha256, the value itself in no argv (printf is a builtin)."""
    return f"printf %s {value} | sha256sum"


def processes_showing(value: str) -> list[str]:
    """'<pid> <what>' for every host process whose command line (anyone may read it) or environment
    holds `value`."""
    found = []
    wanted = value.encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        for what in ("cmdline", "environ"):
            try:
                if wanted in (proc / what).read_bytes():
                    found.append(f"{proc.name} {what}")
            except OSError:
                continue  # gone meanwhile
    return found


def shared_files_holding(root: Path, value: str, changed_since: float | None = None) -> list[str]:
    """'<path> <mode>' for every file under `root` that holds `value` and that group or others may read.
    With `changed_since` (a time.time() from before `value` was made), files whose inode changed
    before it are passed over unread: no write (nor copy, nor utime) that could have put a value made
    later into a file leaves its ctime older. (A shared var/ holds GBs of cached image tarballs that
    reading cost one test ~7 s of CPU.)"""
    found = []
    wanted = value.encode()
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = Path(directory) / name
            info = path.lstat()
            if changed_since is not None and info.st_ctime < changed_since:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_mode & 0o044 and wanted in path.read_bytes():
                found.append(f"{path} {stat.filemode(info.st_mode)}")
    return found
