"""A task's log files with a size cap: past the cap the oldest output goes and the tail stays.

Both executors write their tasks' output through TaskLogs (the process executor's supervisor and
the Docker executor's log thread): three CappedLog files, `all` (stdout and stderr in the order
they came: the task's log_path) and `stdout` and `stderr` beside it, so one chatty task cannot
fill the portal's disk. A cut log starts with CUT_NOTE, which is how the pages know (was_cut) and
tell the reader.

A log keeps what the task printed, its secrets too when it printed them (the portal masks them when
it serves a log, jobs/logs.py): the files are the portal user's alone (0600, in directories made
0700), whatever the umask of the process writing them (a Slurm step's is the cluster's).

Standard library only: the process executor's supervisor imports it without Django.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

DEFAULT_LOG_MAX_BYTES = 64 * 1024 * 1024
FILE_MODE = 0o600
DIR_MODE = 0o700
CUT_NOTE = b"[pai-portal] log cut: earlier output was dropped to keep the log under "
ALL, STDOUT, STDERR = "all", "stdout", "stderr"
STREAMS = (STDOUT, STDERR, ALL)  # in OpenPAI's order of log locations


def stream_log_path(log_path: Path | str, stream: str) -> Path:
    """Where one stream of a task's log is: `all` is log_path itself, `<name>.stdout.log` and
    `<name>.stderr.log` sit beside it."""
    path = Path(log_path)
    return path if stream == ALL else path.with_suffix(f".{stream}{path.suffix}")


class CappedLog:
    """Appends bytes; when the file would pass max_bytes it is rewritten as the note plus the newest
    half of the cap, so cuts are rare (at most one per max_bytes/2 written)."""

    def __init__(self, path: Path | str, max_bytes: int, *, truncate: bool = False):
        self.path = Path(path)
        self.max_bytes = max(max_bytes, 1024)
        make_private_dirs(self.path.parent)
        self._file = _open_private(self.path, truncate=truncate)
        self._size = self._file.seek(0, os.SEEK_END)

    def write(self, data: bytes) -> None:
        if self._size + len(data) > self.max_bytes:
            self._cut(data)
            return
        self._file.write(data)
        self._file.flush()
        self._size += len(data)

    def _cut(self, data: bytes) -> None:
        note = CUT_NOTE + f"{self.max_bytes} bytes (PAI_TASK_LOG_MAX_BYTES)\n".encode()
        keep = self.max_bytes // 2
        self._file.close()
        with open(self.path, "rb") as old:
            old.seek(max(0, self._size - keep))
            tail = (old.read() + data)[-keep:]
        partial = self.path.with_name(self.path.name + ".cut")
        with _open_private(partial, truncate=True) as new:
            new.write(note + tail)
        os.replace(partial, self.path)  # readers see the old file or the new one, never half
        self._file = _open_private(self.path, truncate=False)
        self._size = len(note) + len(tail)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> CappedLog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def make_private_dirs(directory: Path) -> None:
    """`directory` and every missing one above it, made DIR_MODE (Path.mkdir's mode is the last one's only)."""
    missing = []
    while not directory.is_dir():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir(mode=DIR_MODE, exist_ok=True)
        path.chmod(DIR_MODE)  # (less the umask otherwise)


def _open_private(path: Path, *, truncate: bool) -> BinaryIO:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate else os.O_APPEND)
    descriptor = os.open(path, flags, FILE_MODE)
    os.fchmod(descriptor, FILE_MODE)  # (one written before, or with a wider umask)
    return os.fdopen(descriptor, "wb")


class TaskLogs:
    """A task's output kept three ways, each file capped at max_bytes: its stdout, its stderr, and
    both in the order they were written here (the task's log_path)."""

    def __init__(self, log_path: Path | str, max_bytes: int, *, truncate: bool = False):
        self.all = CappedLog(log_path, max_bytes, truncate=truncate)
        self.streams = {
            stream: CappedLog(stream_log_path(log_path, stream), max_bytes, truncate=truncate)
            for stream in (STDOUT, STDERR)
        }

    def write(self, stream: str, data: bytes) -> None:
        self.streams[stream].write(data)
        self.all.write(data)

    def close(self) -> None:
        for log in (self.all, *self.streams.values()):
            log.close()

    def __enter__(self) -> TaskLogs:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def was_cut(path: Path | str) -> bool:
    try:
        with open(path, "rb") as log:
            return log.read(len(CUT_NOTE)) == CUT_NOTE
    except OSError:
        return False
