"""A task's log files with a size cap: past the cap the oldest output goes and the tail stays.

Both executors write their tasks' output through TaskLogs (the process executor's supervisor and
the Docker executor's log thread): three CappedLog files, `all` (stdout and stderr in the order
they came: the task's log_path) and `stdout` and `stderr` beside it, so one chatty task cannot
fill the portal's disk. A cut log starts with CUT_NOTE, which is how the pages know (was_cut) and
tell the reader.

Standard library only: the process executor's supervisor imports it without Django.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

DEFAULT_LOG_MAX_BYTES = 64 * 1024 * 1024
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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "wb" if truncate else "ab")  # noqa: SIM115  (closed by close())
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
        with open(partial, "wb") as new:
            new.write(note + tail)
        os.replace(partial, self.path)  # readers see the old file or the new one, never half
        self._file = open(self.path, "ab")  # noqa: SIM115
        self._size = len(note) + len(tail)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> CappedLog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


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
