"""Reading task logs: the one tail reader the scheduler (exit patterns) uses, and the logs as the
portal serves them (job page, API, signed links): the job's secret values masked as ******, and a
note when the log was cut to its size cap.

The log file holds what the task printed, secrets included (a task may echo one); masking
happens here, on the way out, with the job's decrypted secret values, so every path that serves
a log goes through masked_tail() or masked_chunks().
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator

from clusters.executors.logcap import CUT_NOTE, was_cut
from jobs.crypto import decrypt_text
from jobs.models import Job
from jobs.protocol.v2 import MASK

CHUNK_BYTES = 64 * 1024
CUT_NOTICE = b"[pai-portal] the log was cut to its size cap (PAI_TASK_LOG_MAX_BYTES): only its end is kept\n"


def read_tail(path: str, size: int) -> str:
    """The last `size` bytes of the log at `path` as text ("" when there is none yet). Unmasked:
    for the scheduler's exit patterns, never for a reader."""
    if not path:
        return ""
    try:
        with open(path, "rb") as log_file:
            end = log_file.seek(0, os.SEEK_END)
            log_file.seek(max(0, end - size))
            return log_file.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


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
    try:
        with open(path, "rb") as log:
            end = log.seek(0, 2)
            start = max(0, end - size)
            log.seek(max(0, start - masker.overlap))  # a secret that began just before the tail
            data = log.read()
    except OSError:
        return b""
    masked = masker.mask(data)
    if start > 0:
        masked = masked[-size:]
        if was_cut(path) and not masked.startswith(CUT_NOTE):
            masked = CUT_NOTICE + masked
    return masked


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
