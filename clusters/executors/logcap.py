"""A task's log file with a size cap: past the cap the oldest output goes and the tail stays.

Both executors write their tasks' output through CappedLog (the process executor's supervisor and
the Docker executor's log thread), so one chatty task cannot fill the portal's disk. A cut log
starts with CUT_NOTE, which is how the pages know (was_cut) and tell the reader.

Light standard-library modules only: the process executor's supervisor, which starts with every
task, imports it.
"""

from __future__ import annotations

import os

DEFAULT_LOG_MAX_BYTES = 64 * 1024 * 1024
CUT_NOTE = b"[pai-portal] log cut: earlier output was dropped to keep the log under "


class CappedLog:
    """Appends bytes; when the file would pass max_bytes it is rewritten as the note plus the newest
    half of the cap, so cuts are rare (at most one per max_bytes/2 written)."""

    def __init__(self, path: os.PathLike[str] | str, max_bytes: int, *, truncate: bool = False):
        self.path = os.fspath(path)
        self.max_bytes = max(max_bytes, 1024)
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
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
        partial = self.path + ".cut"
        with open(partial, "wb") as new:
            new.write(note + tail)
        os.replace(partial, self.path)  # readers see the old file or the new one, never half
        self._file = open(self.path, "ab")  # noqa: SIM115
        self._size = len(note) + len(tail)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> CappedLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def was_cut(path: os.PathLike[str] | str) -> bool:
    try:
        with open(path, "rb") as log:
            return log.read(len(CUT_NOTE)) == CUT_NOTE
    except OSError:
        return False
