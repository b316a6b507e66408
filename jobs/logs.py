"""Reading task logs: the one reader the scheduler (exit patterns), the pages and the API use, and
the one place a job's secret values are masked out of what they show.

A task's log is one stream: the executors write stdout and stderr of the task into one file, in
the order they came, so there is no separate stdout or stderr to show.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from jobs.crypto import decrypt_text

MASK = "******"
DOWNLOAD_CHUNK = 64 * 1024


@dataclass(frozen=True)
class LogWindow:
    """The end of a log as the pages show it."""

    text: str
    start: int  # byte offset of `text` in the log: above 0, the beginning was left out
    size: int  # the whole log's size in bytes

    @property
    def truncated(self) -> bool:
        return self.start > 0


def read_tail(path: str, size: int) -> str:
    """The last `size` bytes of the log at `path` as text ("" when there is none yet)."""
    return read_window(path, size, whole_lines=False).text


def read_window(path: str, size: int, *, whole_lines: bool = True) -> LogWindow:
    """The last `size` bytes of the log; with whole_lines, a window that starts inside the log
    starts after its first newline, never in the middle of a line."""
    if not path:
        return LogWindow("", 0, 0)
    try:
        with open(path, "rb") as log_file:
            end = log_file.seek(0, os.SEEK_END)
            start = max(0, end - size)
            log_file.seek(start)
            data = log_file.read()
    except OSError:
        return LogWindow("", 0, 0)
    if whole_lines and start > 0:
        cut = data.find(b"\n") + 1
        if 0 < cut < len(data):
            data, start = data[cut:], start + cut
    return LogWindow(data.decode("utf-8", errors="replace"), start, end)


def iter_log(path: str, secrets: Iterable[str] = ()) -> Iterator[bytes]:
    """The whole log, in pieces of whole lines, with the secret values masked (for downloads)."""
    values = [value.encode() for value in secrets if value]
    if not path:
        return
    try:
        log_file = open(path, "rb")  # noqa: SIM115  (closed when the generator ends)
    except OSError:
        return
    with log_file:
        while piece := log_file.read(DOWNLOAD_CHUNK):
            # Pieces end at a line's end (up to a long line's worth), so a secret is not split.
            if not piece.endswith(b"\n"):
                piece += log_file.readline(DOWNLOAD_CHUNK)
            for value in values:
                piece = piece.replace(value, MASK.encode())
            yield piece


def secret_values(job: Any) -> list[str]:
    """The job's secret values, for masking what its logs show."""
    if not job.secrets_encrypted:
        return []
    try:
        secrets = json.loads(decrypt_text(job.secrets_encrypted))
    except Exception:  # a key rotated away: nothing to mask with, and nothing readable leaks
        return []
    return [str(value) for value in secrets.values() if str(value)]


def mask(text: str, secrets: Iterable[str]) -> str:
    for value in secrets:
        text = text.replace(value, MASK)
    return text
