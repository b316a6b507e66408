"""A container's output with stdout and stderr kept apart, in the order the engine recorded it.

docker-py's `logs()` joins the two streams into one. The engine sends them multiplexed (for
containers without a TTY, as the portal's are): frames of an 8-byte header (the stream, 1 stdout
or 2 stderr; three zero bytes; the payload's length, big-endian) and the payload. This reads those
frames as docker-py's own multiplexed reader does, keeping the stream each came on.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import docker
from docker.constants import STREAM_HEADER_SIZE_BYTES
from docker.utils.socket import STDERR as STDERR_FRAME

from clusters.executors.logcap import STDERR, STDOUT


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
