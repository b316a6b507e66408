"""A container's output copied into its task's log files, stdout and stderr kept apart.

ContainerLogs follows each container from its start (or its adoption: a start that found it there,
a listing after a restart) until it exits, and copies the whole output of one that exited while
nobody followed it. poll() only waits for the last lines.

A followed log is a task of the process's one stream loop (engine_streams.py, beside the engines'
event streams): a running container costs a connection, not a thread. The engine sends each
line with its time (`timestamps`); a stream lost while the container runs (an engine restart, a
connection cut) is opened again from the last line's time (`since`, which the engine counts
inclusive), the lines of that very time already written skipped: none twice, none lost. The
stream's clean end (its last chunk) is the container's exit. The log files of at most
OPEN_FILES_MAX followers are open at a time (the least recently written closed first), and a
follower's files close after LOG_IDLE_S without output: files open stay bounded, not one set per
running task. An engine the loop cannot reach (TLS, ssh) gets a thread per followed container,
as before (`on_loop` False: the same for every engine, a bench's look at that design).

The engine sends the two streams multiplexed (for containers without a TTY, as the portal's are):
frames of an 8-byte header (the stream, 1 stdout or 2 stderr; three zero bytes; the payload's
length, big-endian) and the payload. This reads those frames as docker-py's own multiplexed
reader does, keeping the stream each came on.
"""

from __future__ import annotations

import asyncio
import calendar
import contextlib
import functools
import logging
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import wait as wait_for_futures
from pathlib import Path

import docker
import requests
import urllib3
from docker.constants import STREAM_HEADER_SIZE_BYTES
from docker.errors import APIError
from docker.utils.socket import STDERR as STDERR_FRAME

from clusters.executors.docker_engine import ENGINE_ERRORS, Engine
from clusters.executors.engine_streams import Dechunked, Refused, Streams, endpoint, open_stream
from clusters.executors.logcap import STDERR, STDOUT, TaskLogs, make_private_dirs

log = logging.getLogger("pai.executors.docker")

LOG_FLUSH_WAIT_S = 3.0
LOG_FLUSH_MOST_S = 30.0
ENGINE_LOG_MIN_BYTES = 16 * 1024 * 1024
REOPEN_WAIT_S = (0.5, 10.0)  # the wait before a lost log stream is opened again: first, most
LOG_IDLE_S = 10.0  # a follower's files close after this long without output
OPEN_FILES_MAX = 512  # followers whose files are open at once (three files each)
HEADER = struct.Struct(">BxxxL")
READ_BYTES = 1 << 18  # what one read of a log stream takes at most
OPEN_TIMEOUT_S = 30.0  # a log stream's opening (connection and the answer's head) at most
OPENING = asyncio.Semaphore(32)  # log streams being opened at once (on the stream loop)


def log_frames(api: docker.APIClient, container_id: str, *, follow: bool) -> Iterator[tuple[str, bytes]]:
    """(stream, bytes) frames of the container's whole output; with `follow`, until it exits.
    Raises requests' errors (HTTPError for an engine's refusal) like the rest of the client."""
    url = f"{api.base_url}/v{api.api_version}/containers/{container_id}/logs"
    params = {"stdout": 1, "stderr": 1, "follow": int(follow)}
    with api.get(url, params=params, stream=True, timeout=api.timeout) as response:
        response.raise_for_status()
        while header := response.raw.read(STREAM_HEADER_SIZE_BYTES):
            stream, length = HEADER.unpack(header)
            if not length:
                continue
            data = response.raw.read(length)
            if not data:
                break
            yield STDERR if stream == STDERR_FRAME else STDOUT, data


class ContainerLogs:
    """The log files of one engine's containers, each capped at `max_bytes`."""

    on_loop = True  # followed on the stream loop where the engine can be reached there

    def __init__(self, engine: Engine, max_bytes: int) -> None:
        self.engine = engine
        self.max_bytes = max_bytes  # the task's log file and the engine's own copy of it
        self.address = endpoint(engine.docker_url)
        self._lock = threading.Lock()
        self._followers: dict[str, Future[None]] = {}
        self._streams: dict[str, LogStream] = {}  # (the followers on the loop: how far they got)
        self._complete: set[str] = set()  # exited containers whose log file is whole

    @property
    def engine_options(self) -> dict[str, str]:
        """The engine's own copy of the output (json-file) is bounded too. Rotating it faster than
        the log follower reads breaks the stream ("Error grabbing logs"), so never below 16 MiB."""
        return {"max-size": str(max(self.max_bytes, ENGINE_LOG_MIN_BYTES)), "max-file": "2"}

    def follow(self, container_id: str, log_path: Path, *, append: bool) -> None:
        """Copy the container's output into the task's log files while it runs (once per container)."""
        log_path = Path(log_path)
        make_private_dirs(log_path.parent)
        with self._lock:
            if container_id in self._followers:
                return
            if self.on_loop and self.address is not None:
                copy = LogStream(self.address, container_id, TaskFiles(log_path, self.max_bytes, truncate=not append))
                self._followers[container_id] = Streams.shared().run(copy.follow())
                self._streams[container_id] = copy
                return
            future: Future[None] = Future()
            self._followers[container_id] = future
        thread = threading.Thread(
            target=self._copy,
            args=(container_id, log_path, not append, future),
            name=f"pai-log-{container_id[:12]}",
            daemon=True,
        )
        thread.start()

    def copy_whole(self, container_id: str, log_path: Path) -> None:
        with TaskLogs(log_path, self.max_bytes, truncate=True) as logs:
            for stream, chunk in log_frames(self.engine.api, container_id, follow=False):
                logs.write(stream, chunk)

    def exited(self, container_id: str, log_path: str | None) -> None:
        """The container exited: its follower's last lines written, or (it exited while no
        scheduler followed it: a restart) its output copied whole, once."""
        with self._lock:
            followed = container_id in self._followers
        if followed:
            self.finish(container_id)
        elif container_id not in self._complete and log_path:
            with contextlib.suppress(APIError, requests.exceptions.RequestException, OSError):
                self.copy_whole(container_id, Path(log_path))
        self._complete.add(container_id)

    def finish(self, container_id: str, wait: float = LOG_FLUSH_WAIT_S) -> None:
        """Let the follower write the last lines: up to `wait` seconds, or (on the loop) while it
        still writes, until `wait` seconds pass without a line (LOG_FLUSH_MOST_S at most)."""
        with self._lock:
            follower = self._followers.pop(container_id, None)
            stream = self._streams.pop(container_id, None)
        if follower is None:
            return
        began = time.monotonic()
        while not wait_for_futures([follower], timeout=wait).done and stream is not None:
            now = time.monotonic()  # (the loop's clock too)
            if now - stream.wrote >= wait or now - began >= LOG_FLUSH_MOST_S:
                return

    def forget(self, container_id: str) -> None:
        """The container is removed."""
        with self._lock:
            follower = self._followers.get(container_id)
        self.finish(container_id, wait=0.5)
        if follower is not None:
            follower.cancel()  # (a stream the removal did not end)
        self._complete.discard(container_id)

    def following(self) -> int:
        """How many containers' logs are followed now (a test's, a bench's look)."""
        with self._lock:
            return sum(not follower.done() for follower in self._followers.values())

    def _copy(self, container_id: str, log_path: Path, truncate: bool, done: Future[None]) -> None:
        """The thread of one container's log, for an engine the loop cannot reach."""
        try:
            api = self.engine.stream_client()
            with TaskLogs(log_path, self.max_bytes, truncate=truncate) as logs:
                for stream, chunk in log_frames(api, container_id, follow=True):
                    logs.write(stream, chunk)
            api.close()
        except (*ENGINE_ERRORS, OSError, urllib3.exceptions.HTTPError) as exc:  # (a raw read's: a cut stream)
            log.debug("log stream of %s ended: %s", container_id[:12], exc)
        finally:
            with contextlib.suppress(InvalidStateError):  # (cancelled by forget())
                done.set_result(None)


class TaskFiles:
    """A followed task's log files, opened when output comes (truncated the first time where asked)
    and closed by the loop's OpenFiles when idle or when others need the room."""

    def __init__(self, log_path: Path, max_bytes: int, *, truncate: bool) -> None:
        self.log_path, self.max_bytes, self.truncate = log_path, max_bytes, truncate
        self.logs: TaskLogs | None = None

    def open(self) -> TaskLogs:
        if self.logs is None:
            OPEN_FILES.make_room()
            self.logs = TaskLogs(self.log_path, self.max_bytes, truncate=self.truncate)
            self.truncate = False
        OPEN_FILES.used(self)
        return self.logs

    def close(self) -> None:
        OPEN_FILES.closed(self)
        if self.logs is not None:
            self.logs.close()
            self.logs = None


class OpenFiles:
    """The followers whose files are open, least recently written first (the loop's thread only)."""

    def __init__(self) -> None:
        self._open: OrderedDict[int, TaskFiles] = OrderedDict()

    def make_room(self) -> None:
        while len(self._open) >= OPEN_FILES_MAX:
            _, oldest = self._open.popitem(last=False)
            oldest.close()

    def used(self, files: TaskFiles) -> None:
        self._open[id(files)] = files
        self._open.move_to_end(id(files))

    def closed(self, files: TaskFiles) -> None:
        self._open.pop(id(files), None)


OPEN_FILES = OpenFiles()


class LogStream:
    """One container's log followed on the stream loop into its task's files, resumed from the last
    line's time when the stream is lost (see the module's docstring). It reads whatever the
    connection holds at once (many lines a read, written in one go), not a chunk at a time."""

    def __init__(self, address: tuple[str, int], container_id: str, files: TaskFiles) -> None:
        self.address, self.container_id, self.files = address, container_id, files
        self.last = 0  # the last line's time (ns since the epoch) written
        self.at_last = 0  # lines of that very time written
        self.skip = 0  # lines of that time still to skip (an opened-again stream sends them again)
        self.opened = 0
        self.wrote = 0.0  # (the loop's time of the last write)
        self._idle: asyncio.TimerHandle | None = None

    async def follow(self) -> None:
        wait = REOPEN_WAIT_S[0]
        try:
            self._logs()  # (the page shows the log, empty, from the start)
            while True:
                try:
                    if await self._read():
                        return
                    wait = REOPEN_WAIT_S[0]
                except Refused as refused:
                    if refused.status == 404:
                        return  # removed: nothing more will come
                    log.info("log stream of %s refused: %s; again in %.1f s", self.container_id[:12], refused, wait)
                except (OSError, ValueError, asyncio.IncompleteReadError, TimeoutError) as exc:
                    log.info("log stream of %s lost: %r; again in %.1f s", self.container_id[:12], exc, wait)
                await asyncio.sleep(wait)
                wait = min(wait * 2, REOPEN_WAIT_S[1])
        finally:
            if self._idle is not None:
                self._idle.cancel()
            self.files.close()

    async def _read(self) -> bool:
        """Copies the stream until it ends: True at its clean end (the container exited); False
        when the engine's answer was cut short (the stream lost)."""
        since = f"&since={self.last // 10**9}.{self.last % 10**9:09d}" if self.last else ""
        target = f"/containers/{self.container_id}/logs?stdout=1&stderr=1&follow=1&timestamps=1{since}"
        async with OPENING:  # (thousands of streams asked for at once, after a restart: a few at a time)
            reader, writer, chunked = await asyncio.wait_for(open_stream(self.address, target), OPEN_TIMEOUT_S)
        self.skip, self.opened = self.at_last, self.opened + 1
        body = Dechunked() if chunked else None
        buffer = b""
        try:
            while data := await reader.read(READ_BYTES):
                if body is not None:
                    data = body.feed(data)
                buffer = self._write(buffer + data) if data else buffer
                if body is not None and body.ended:
                    return True
            return body is None  # (the connection's end: a body that is not chunked ends there)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def _logs(self) -> TaskLogs:
        """The files, opened where they were closed; closed again after LOG_IDLE_S without output."""
        self.wrote = asyncio.get_running_loop().time()
        if self._idle is None:
            self._idle = asyncio.get_running_loop().call_later(LOG_IDLE_S, self._close_idle)
        return self.files.open()

    def _close_idle(self) -> None:
        quiet = asyncio.get_running_loop().time() - self.wrote
        if quiet >= LOG_IDLE_S or self.files.logs is None:
            self._idle = None
            self.files.close()  # (its files give their room; opened again when output comes)
        else:
            self._idle = asyncio.get_running_loop().call_later(LOG_IDLE_S - quiet, self._close_idle)

    def _write(self, buffer: bytes) -> bytes:
        """Writes the whole frames in `buffer` (a stream's lines in a row in one write); returns
        what is left of it (a frame's beginning)."""
        at, size = 0, len(buffer)
        stream, lines = STDOUT, list[bytes]()
        while size - at >= HEADER.size:
            kind, length = HEADER.unpack_from(buffer, at)
            end = at + HEADER.size + length
            if end > size:
                break
            stamp, _, line = buffer[at + HEADER.size : end].partition(b" ")
            at = end
            if not line or not self._new(stamp):
                continue
            name = STDERR if kind == STDERR_FRAME else STDOUT
            if name != stream and lines:
                self._logs().write(stream, b"".join(lines))
                lines = []
            stream = name
            lines.append(line)
        if lines:
            self._logs().write(stream, b"".join(lines))
        return buffer[at:]

    def _new(self, stamp: bytes) -> bool:
        """Whether a line of this time is new (not one an opened-again stream sends again)."""
        at = nanoseconds(stamp)
        if not at:
            return True  # (no time to tell by: written)
        if at < self.last:
            return False
        if at == self.last:
            if self.skip:
                self.skip -= 1
                return False
            self.at_last += 1
            return True
        self.last, self.at_last, self.skip = at, 1, 0
        return True


def nanoseconds(stamp: bytes) -> int:
    """The engine's line time (RFC 3339 in UTC with nanoseconds: 2024-05-01T10:00:00.123456789Z)
    as ns since the epoch; 0 where it is none."""
    fraction = stamp[20:-1]
    if stamp[19:20] != b"." or stamp[-1:] != b"Z" or not fraction.isdigit():
        return 0
    seconds = _epoch(stamp[:19])
    return 0 if seconds is None else seconds * 10**9 + int(fraction[:9].ljust(9, b"0"))


@functools.lru_cache(maxsize=256)
def _epoch(whole: bytes) -> int | None:
    """2024-05-01T10:00:00 (UTC) as seconds since the epoch (the lines of one second share it)."""
    try:
        return calendar.timegm(time.strptime(whole.decode("ascii"), "%Y-%m-%dT%H:%M:%S"))
    except (UnicodeDecodeError, ValueError):
        return None
