"""A container's output copied into its task's log files, stdout and stderr kept apart.

ContainerLogs follows each container from its start (or its adoption: a start that found it there,
a listing after a restart) on a thread of its own until it exits, and copies the whole output of
one that exited while nobody followed it. Nothing else starts a thread: poll() only waits for the
last lines.

docker-py's `logs()` joins the two streams into one. The engine sends them multiplexed (for
containers without a TTY, as the portal's are): frames of an 8-byte header (the stream, 1 stdout
or 2 stderr; three zero bytes; the payload's length, big-endian) and the payload. This reads those
frames as docker-py's own multiplexed reader does, keeping the stream each came on.
"""

from __future__ import annotations

import contextlib
import logging
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import docker
import requests
from docker.constants import STREAM_HEADER_SIZE_BYTES
from docker.errors import APIError
from docker.utils.socket import STDERR as STDERR_FRAME

from clusters.executors.docker_engine import ENGINE_ERRORS, Engine
from clusters.executors.logcap import STDERR, STDOUT, TaskLogs, make_private_dirs

log = logging.getLogger("pai.executors.docker")

LOG_FLUSH_WAIT_S = 3.0
ENGINE_LOG_MIN_BYTES = 16 * 1024 * 1024


def log_frames(api: docker.APIClient, container_id: str, *, follow: bool) -> Iterator[tuple[str, bytes]]:
    """(stream, bytes) frames of the container's whole output; with `follow`, until it exits.
    Raises requests' errors (HTTPError for an engine's refusal) like the rest of the client."""
    url = f"{api.base_url}/v{api.api_version}/containers/{container_id}/logs"
    params = {"stdout": 1, "stderr": 1, "follow": int(follow)}
    with api.get(url, params=params, stream=True, timeout=api.timeout) as response:
        response.raise_for_status()
        while header := response.raw.read(STREAM_HEADER_SIZE_BYTES):
            stream, length = struct.unpack(">BxxxL", header)
            if not length:
                continue
            data = response.raw.read(length)
            if not data:
                break
            yield STDERR if stream == STDERR_FRAME else STDOUT, data


class ContainerLogs:
    """The log files of one engine's containers, each capped at `max_bytes`."""

    def __init__(self, engine: Engine, max_bytes: int) -> None:
        self.engine = engine
        self.max_bytes = max_bytes  # the task's log file and the engine's own copy of it
        self._lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}
        self._complete: set[str] = set()  # exited containers whose log file is whole

    @property
    def engine_options(self) -> dict[str, str]:
        """The engine's own copy of the output (json-file) is bounded too. Rotating it faster than
        the log thread reads breaks the stream ("Error grabbing logs"), so never below 16 MiB."""
        return {"max-size": str(max(self.max_bytes, ENGINE_LOG_MIN_BYTES)), "max-file": "2"}

    def follow(self, container_id: str, log_path: Path, *, append: bool) -> None:
        """Copy the container's output into the task's log files while it runs (once per container)."""
        log_path = Path(log_path)
        make_private_dirs(log_path.parent)
        thread = threading.Thread(
            target=self._copy,
            args=(container_id, log_path, "ab" if append else "wb"),
            name=f"pai-log-{container_id[:12]}",
            daemon=True,
        )
        with self._lock:
            if container_id in self._threads:
                return
            self._threads[container_id] = thread
        thread.start()

    def copy_whole(self, container_id: str, log_path: Path) -> None:
        with TaskLogs(log_path, self.max_bytes, truncate=True) as logs:
            for stream, chunk in log_frames(self.engine.api, container_id, follow=False):
                logs.write(stream, chunk)

    def exited(self, container_id: str, log_path: str | None) -> None:
        """The container exited: its follower's last lines written, or (it exited while no
        scheduler followed it: a restart) its output copied whole, once."""
        with self._lock:
            followed = container_id in self._threads
        if followed:
            self.finish(container_id)
        elif container_id not in self._complete and log_path:
            with contextlib.suppress(APIError, requests.exceptions.RequestException, OSError):
                self.copy_whole(container_id, Path(log_path))
        self._complete.add(container_id)

    def finish(self, container_id: str, wait: float = LOG_FLUSH_WAIT_S) -> None:
        """Let the follower write the last lines (up to `wait` seconds)."""
        with self._lock:
            thread = self._threads.pop(container_id, None)
        if thread is not None:
            thread.join(timeout=wait)

    def forget(self, container_id: str) -> None:
        """The container is removed."""
        self.finish(container_id, wait=0.5)
        self._complete.discard(container_id)

    def _copy(self, container_id: str, log_path: Path, mode: str) -> None:
        try:
            api = self.engine.stream_client()
            with TaskLogs(log_path, self.max_bytes, truncate=mode == "wb") as logs:
                for stream, chunk in log_frames(api, container_id, follow=True):
                    logs.write(stream, chunk)
            api.close()
        except (*ENGINE_ERRORS, OSError) as exc:
            log.debug("log stream of %s ended: %s", container_id[:12], exc)
