"""Reading task logs: the one tail reader the scheduler (exit patterns) uses, and the logs as the
portal serves them (job page, API, signed links): the job's secret values masked as ******, and a
note when the log was cut to its size cap.

The log file holds what the task printed, secrets included (a task may echo one); masking
happens here, on the way out, with the job's decrypted secret values, so every path that serves
a log goes through masked_window(), masked_tail() or masked_chunks().

A task's log has three streams (clusters.executors.logcap): `all`, its stdout and stderr in the
order they came (the task's log_path), and `stdout` and `stderr` apart, in files beside it.
Logs written before the streams were kept apart have `all` alone.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from clusters.executors.logcap import ALL, CUT_NOTE, STREAMS, stream_log_path, was_cut
from jobs.crypto import decrypt_text
from jobs.models import Job
from jobs.protocol.v2 import MASK

CHUNK_BYTES = 64 * 1024
CUT_NOTICE = b"[pai-portal] the log was cut to its size cap (PAI_TASK_LOG_MAX_BYTES): only its end is kept\n"


@dataclass(frozen=True)
class LogEnd:
    data: bytes  # from `start - lead` to the end of the log
    start: int  # where the last `size` bytes begin
    end: int  # the log's size


def read_end(path: str, size: int, lead: int = 0) -> LogEnd | None:
    """The last `size` bytes of the log (plus `lead` bytes before them); None when there is no
    log yet. The one reader every tail below goes through."""
    if not path:
        return None
    try:
        with open(path, "rb") as log_file:
            end = log_file.seek(0, os.SEEK_END)
            start = max(0, end - size)
            log_file.seek(max(0, start - lead))
            return LogEnd(log_file.read(), start, end)
    except OSError:
        return None


def read_tail(path: str, size: int) -> str:
    """The last `size` bytes of the log at `path` as text ("" when there is none yet). Unmasked:
    for the scheduler's exit patterns, never for a reader."""
    tail = read_end(path, size)
    return tail.data.decode("utf-8", errors="replace") if tail else ""


def stream_path(log_path: str, stream: str) -> str:
    """The file of one stream (`all`, `stdout`, `stderr`) of the log at log_path; "" for none."""
    if not log_path or stream not in STREAMS:
        return ""
    return str(stream_log_path(log_path, stream))


def log_streams(log_path: str) -> list[str]:
    """The streams a log has: all three, or `all` alone for a log written before they were kept
    apart (or by the scheduler alone, a start that failed)."""
    if not log_path or not os.path.exists(log_path):
        return list(STREAMS)  # nothing written yet: the executor will write all three
    apart = all(os.path.exists(stream_log_path(log_path, stream)) for stream in STREAMS if stream != ALL)
    return list(STREAMS) if apart else [ALL]


def secret_values(job: Job) -> list[str]:
    if not job.secrets_encrypted:
        return []
    try:
        secrets = json.loads(decrypt_text(job.secrets_encrypted))
    except Exception:  # a key rotated away: nothing to mask with, and nothing readable leaks
        return []
    return [str(value) for value in secrets.values() if str(value)]


class Masker:
    """Replaces every occurrence of the secrets, also one split across two chunks of a stream."""

    def __init__(self, secrets: Iterable[str]):
        encoded = sorted({secret.encode() for secret in secrets if secret}, key=len, reverse=True)
        self.pattern = re.compile(b"|".join(re.escape(secret) for secret in encoded)) if encoded else None
        # Bytes held back at a chunk's end: the most of a secret that can be there unfinished.
        self.overlap = max((len(secret) for secret in encoded), default=1) - 1

    def mask(self, data: bytes) -> bytes:
        return self.pattern.sub(MASK.encode(), data) if self.pattern else data

    def chunks(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        if self.pattern is None:
            yield from chunks
            return
        pending = b""
        for chunk in chunks:
            data = pending + chunk
            # An occurrence starting before safe_end ends inside data (no secret is longer), so
            # it is matched whole; one starting later may go on in the next chunk.
            safe_end = len(data) - self.overlap
            out, done = [], 0
            for match in self.pattern.finditer(data):
                if match.start() >= safe_end:
                    break
                out += [data[done : match.start()], MASK.encode()]
                done = match.end()
            cut = max(done, safe_end)
            out.append(data[done:cut])
            pending = data[cut:]
            yield b"".join(out)
        yield self.mask(pending)


def masked_tail(job: Job, path: str, size: int) -> bytes:
    """The last `size` bytes of the log (about: masking changes lengths), masked, with the cut note
    first when the log was cut and the note itself is not in the tail."""
    masker = Masker(secret_values(job))
    tail = read_end(path, size, lead=masker.overlap)  # a secret that began just before the tail
    if tail is None:
        return b""
    masked, start = masker.mask(tail.data), tail.start
    if start > 0:
        masked = masked[-size:]
        if was_cut(path) and not masked.startswith(CUT_NOTE):
            masked = CUT_NOTICE + masked
    return masked


@dataclass(frozen=True)
class LogWindow:
    """The end of a log as the job page shows it."""

    text: str
    start: int  # byte offset of `text` in the log: above 0, the beginning was left out
    size: int  # the whole log's size in bytes

    @property
    def truncated(self) -> bool:
        return self.start > 0


def masked_window(job: Job, path: str, size: int) -> LogWindow:
    """The last `size` bytes of the log, starting at a line's start (never mid-line), masked, with
    where they start in the log and its size, so the page can say what it left out; the cut note
    first, as in masked_tail, when the executor cut the log at its size cap."""
    tail = read_end(path, size)
    if tail is None:
        return LogWindow("", 0, 0)
    data, start, end = tail.data, tail.start, tail.end
    if start > 0:
        # The partial first line goes, and with it any secret that began before the window.
        line_start = data.find(b"\n") + 1
        if 0 < line_start < len(data):
            data, start = data[line_start:], start + line_start
    masked = Masker(secret_values(job)).mask(data)
    if start > 0 and was_cut(path):
        masked = CUT_NOTICE + masked
    return LogWindow(masked.decode("utf-8", errors="replace"), start, end)


def masked_chunks(job: Job, path: str) -> Iterator[bytes]:
    """The whole log, streamed and masked (a download, the API's log link)."""
    masker = Masker(secret_values(job))
    try:
        log = open(path, "rb")  # noqa: SIM115  (closed when the stream ends)
    except OSError:
        return iter(())

    def read() -> Iterator[bytes]:
        with log:
            while chunk := log.read(CHUNK_BYTES):
                yield chunk

    return masker.chunks(read())


@dataclass(frozen=True)
class LogSearch:
    """The lines of a whole log holding a query (issue 36: the page's own search saw its last
    64 KB only). `matches` holds the first `max_matches` of them as (line number from 1, text)."""

    matches: list[tuple[int, str]]
    matched: int  # every matching line, also those past the cap
    lines: int  # the log's lines

    @property
    def capped(self) -> bool:
        return self.matched > len(self.matches)


def _lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    pending = b""
    for chunk in chunks:
        pending += chunk
        *whole, pending = pending.split(b"\n")
        yield from whole
    if pending:
        yield pending


def search_log(job: Job, path: str, query: str, max_matches: int, max_line_chars: int = 2000) -> LogSearch:
    """Every line of the whole log (streamed, masked: a secret is not found by its value) that
    holds `query`, case-insensitively; only the first `max_matches` kept, each cut to
    `max_line_chars` characters."""
    needle = query.casefold()
    matches: list[tuple[int, str]] = []
    matched = number = 0
    for number, raw in enumerate(_lines(masked_chunks(job, path)), start=1):
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        if needle in line.casefold():
            matched += 1
            if len(matches) < max_matches:
                matches.append((number, line[:max_line_chars]))
    return LogSearch(matches, matched, number)


@dataclass(frozen=True)
class LogLines:
    """Some lines of a whole log, in order: a search result's context (line numbers from 1)."""

    lines: list[tuple[int, str]]
    last: bool  # the last of them is the log's last line


def log_lines(job: Job, path: str, first: int, count: int, max_line_chars: int = 2000) -> LogLines:
    """`count` lines of the whole log (streamed, masked) from line `first` on, each cut to
    `max_line_chars` characters; reading stops at the last of them."""
    lines: list[tuple[int, str]] = []
    for number, raw in enumerate(_lines(masked_chunks(job, path)), start=1):
        if number >= first + count:
            return LogLines(lines, last=False)
        if number >= first:
            lines.append((number, raw.decode("utf-8", errors="replace").rstrip("\r")[:max_line_chars]))
    return LogLines(lines, last=True)
