"""Engine streams that last (events, followed logs) read on one asyncio thread of the process.

A stream costs a connection, not a thread: every engine's event stream (docker_events.py) and
every running container's log (docker_logs.py) is a task of the one loop `Streams.shared()` runs.
They speak plain HTTP/1.1 to the engine's API over its unix socket or plain TCP (`endpoint`);
an engine reached otherwise (TLS, ssh) is left to docker-py by their callers.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any
from urllib.parse import urlsplit

LOCAL_SOCKET = "/var/run/docker.sock"
READ_LIMIT = 1 << 20  # (a reader's buffer at most)


def endpoint(docker_url: str | None) -> tuple[str, int] | None:
    """Where an engine's API is: (a unix socket's path, 0) or (host, TCP port); None where not followed."""
    if not docker_url:
        return LOCAL_SOCKET, 0
    if docker_url.startswith("/"):
        return docker_url, 0
    parts = urlsplit(docker_url)
    if parts.scheme in ("unix", "http+unix"):
        return parts.path, 0
    if parts.scheme in ("tcp", "http") and parts.hostname:
        return parts.hostname, parts.port or 2375
    return None


class Streams:
    """The one thread that reads every engine stream of this process."""

    _shared: Streams | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._tasks: set[asyncio.Task[None]] = set()  # (the loop holds its tasks weakly)
        threading.Thread(target=self.loop.run_forever, name="pai-docker-streams", daemon=True).start()

    def follow(self, follower: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Runs `follower()` on the loop until it returns."""

        def begin() -> None:
            task = self.loop.create_task(follower())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        self.loop.call_soon_threadsafe(begin)

    def run(self, coroutine: Coroutine[Any, Any, None]) -> Future[None]:
        """Runs `coroutine` on the loop; its future (done when it returns, cancel() ends it) keeps it."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    @classmethod
    def shared(cls) -> Streams:
        with cls._lock:
            if cls._shared is None:
                cls._shared = Streams()
            return cls._shared


class Refused(ValueError):
    """The engine answered the request with another status than 200."""

    def __init__(self, status: int, line: bytes) -> None:
        super().__init__(f"the engine answered {line[:80]!r}")
        self.status = status


async def open_stream(address: tuple[str, int], target: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
    """GET `target` from the engine: (reader, writer, whether the body is chunked), past the answer's
    head. Refused: no 200; OSError: no connection. The caller closes the writer."""
    host, port = address
    if port:
        reader, writer = await asyncio.open_connection(host, port, limit=READ_LIMIT)
    else:
        reader, writer = await asyncio.open_unix_connection(host, limit=READ_LIMIT)
    try:
        writer.write(f"GET {target} HTTP/1.1\r\nHost: docker\r\n\r\n".encode())
        await writer.drain()
        return reader, writer, await _headers(reader)
    except BaseException:
        writer.close()
        raise


async def _headers(reader: asyncio.StreamReader) -> bool:
    """Reads the answer's head; whether its body is chunked. Refused: no stream."""
    status = await reader.readline()
    code = status.split()[1:2]
    if not status.startswith(b"HTTP/1.") or code != [b"200"]:
        raise Refused(int(code[0]) if code and code[0].isdigit() else 0, status)
    chunked = False
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    return chunked


async def next_data(reader: asyncio.StreamReader, chunked: bool) -> bytes:
    """The body's next bytes; b"" at its end (a chunked body's last chunk, or the connection's end
    of one that is not). A chunked body cut short raises IncompleteReadError: the stream was lost."""
    if not chunked:
        return await reader.read(65536)
    line = await reader.readline()
    if not line.endswith(b"\n"):
        raise asyncio.IncompleteReadError(line, None)
    size = int(line.split(b";")[0].strip() or b"0", 16)
    if not size:
        return b""
    data = await reader.readexactly(size)
    await reader.readexactly(2)  # (the chunk's CRLF)
    return data


class Dechunked:
    """A chunked body's data from its bytes as they come, many chunks at a time (`feed`); `ended`
    once its last chunk came."""

    def __init__(self) -> None:
        self.ended = False
        self._pending = b""  # a chunk's size line, not whole yet
        self._left = 0  # the current chunk's bytes still to come
        self._skip = 0  # of the CRLF after a chunk's bytes

    def feed(self, data: bytes) -> bytes:
        data, self._pending = self._pending + data, b""
        out, at, size = [], 0, len(data)
        while at < size and not self.ended:
            if self._skip:
                step = min(self._skip, size - at)
                at, self._skip = at + step, self._skip - step
            elif self._left:
                step = min(self._left, size - at)
                out.append(data[at : at + step])
                at, self._left = at + step, self._left - step
                self._skip = 0 if self._left else 2
            else:
                line_end = data.find(b"\n", at)
                if line_end < 0:
                    self._pending = data[at:]
                    break
                self._left = int(data[at:line_end].split(b";")[0].strip() or b"0", 16)
                at = line_end + 1
                self.ended = not self._left
        return b"".join(out)
