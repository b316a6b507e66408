"""Reading task logs: the one tail reader the scheduler (exit patterns), the pages and the API use."""

from __future__ import annotations

import os


def read_tail(path: str, size: int) -> str:
    """The last `size` bytes of the log at `path` as text ("" when there is none yet)."""
    if not path:
        return ""
    try:
        with open(path, "rb") as log_file:
            end = log_file.seek(0, os.SEEK_END)
            log_file.seek(max(0, end - size))
            return log_file.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
